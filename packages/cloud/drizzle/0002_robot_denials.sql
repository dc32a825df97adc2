ALTER TABLE "robots" ADD COLUMN "last_denial_reason" text;--> statement-breakpoint
ALTER TABLE "robots" ADD COLUMN "last_denial_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "robots" ADD CONSTRAINT "robots_last_denial_reason_check" CHECK ("robots"."last_denial_reason" in ('key-mismatch', 'bad-signature'));--> statement-breakpoint
ALTER TABLE "robots" ADD CONSTRAINT "robots_last_denial_check" CHECK (("robots"."last_denial_reason" is null) = ("robots"."last_denial_at" is null));