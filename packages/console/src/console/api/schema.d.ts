export interface paths {
  '/api/v1/console-config': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** What the console needs to start a login */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description What the console needs to start a login */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              issuer: string;
              clientId: string;
              /** @description The `resource` (audience) to ask access tokens for */
              apiResource: string;
              scopes: string[];
              /** @enum {string} */
              provisioning: 'self-serve' | 'invite-only' | 'default-org';
              /** @description Whether the issuer is the embedded development provider */
              developmentProvider: boolean;
              /** @description Whether callers without an account may list and drive robots */
              anonymous: boolean;
              /** @description Whether development open enrolment admits unknown robots (they belong to no organisation) */
              openEnrolment: boolean;
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/me': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Signs the caller in (first login provisions them) and says who they are and where they belong
     * @description Bearer: the access token issued for the API resource. Header `x-svc-id-token`: the ID token of the same login; its `sub` must equal the access token's and its email counts only when `email_verified` is true. Without it the verified email comes from userinfo, when the provider answers there.
     */
    get: {
      parameters: {
        query?: never;
        header?: {
          /** @description The ID token of the same login */
          'x-svc-id-token'?: string;
        };
        path?: never;
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description The signed-in user and their organisations */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              user: {
                /** Format: uuid */
                id: string;
                /** @description The verified email, or null when the provider vouched for none */
                email: string | null;
                name: string | null;
                emailVerified: boolean;
              };
              orgs: {
                /** Format: uuid */
                id: string;
                name: string;
                /** @enum {string} */
                role: 'owner' | 'admin' | 'operator' | 'viewer';
              }[];
              /**
               * @description What the console shows next: the fleet, or the "no organisation yet" page
               * @enum {string}
               */
              status: 'ready' | 'no-organisation';
              /** @enum {string} */
              provisioning: 'self-serve' | 'invite-only' | 'default-org';
              firstLogin: boolean;
              /** @description The user was known under another identity provider and moved to this one */
              providerChanged: boolean;
            };
          };
        };
        /** @description `id-token-rejected`: the `x-svc-id-token` header is not a valid ID token of the same user as the access token */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'id-token-rejected';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/orgs': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** The caller's organisations */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description The caller's organisations, by name */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              orgs: {
                /** Format: uuid */
                id: string;
                name: string;
                /** @enum {string} */
                role: 'owner' | 'admin' | 'operator' | 'viewer';
                /** Format: date-time */
                createdAt: string;
              }[];
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    /** Creates an organisation the caller owns (self-serve only) */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            name: string;
          };
        };
      };
      responses: {
        /** @description The new organisation; the caller is its owner */
        201: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              org: {
                /** Format: uuid */
                id: string;
                name: string;
                /** @enum {string} */
                role: 'owner' | 'admin' | 'operator' | 'viewer';
                /** Format: date-time */
                createdAt: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/orgs/{org}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** One organisation */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description The organisation, with the caller’s role and its number of members */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              org: {
                /** Format: uuid */
                id: string;
                name: string;
                /** Format: date-time */
                createdAt: string;
                /**
                 * @description The caller's role
                 * @enum {string}
                 */
                role: 'owner' | 'admin' | 'operator' | 'viewer';
                members: number;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    post?: never;
    /**
     * Deletes an organisation (owner)
     * @description Its robots (and their grants) are deleted with it; they must enrol again to join another.
     */
    delete: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Done; no body */
        204: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    options?: never;
    head?: never;
    /** Renames an organisation (admin) */
    patch: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            name: string;
          };
        };
      };
      responses: {
        /** @description The new name */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              org: {
                /** Format: uuid */
                id: string;
                name: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    trace?: never;
  };
  '/api/v1/orgs/{org}/members': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** Members and their roles */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Members, by email */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              members: {
                /** Format: uuid */
                userId: string;
                email: string | null;
                name: string | null;
                /** @enum {string} */
                role: 'owner' | 'admin' | 'operator' | 'viewer';
                /** Format: date-time */
                since: string;
              }[];
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/orgs/{org}/members/{user}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    post?: never;
    /** Removes a member (or leaves, for oneself) */
    delete: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
          user: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Done; no body */
        204: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `conflict`: the change contradicts the current state (a duplicate, the last owner, a used token) */
        409: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'conflict';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    options?: never;
    head?: never;
    /**
     * Changes a member's role
     * @description Admins manage operators and viewers; owners manage everyone. An org keeps one owner.
     */
    patch: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
          user: string;
        };
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            /** @enum {string} */
            role: 'owner' | 'admin' | 'operator' | 'viewer';
          };
        };
      };
      responses: {
        /** @description The new role */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              member: {
                /** Format: uuid */
                userId: string;
                /** @enum {string} */
                role: 'owner' | 'admin' | 'operator' | 'viewer';
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `conflict`: the change contradicts the current state (a duplicate, the last owner, a used token) */
        409: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'conflict';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    trace?: never;
  };
  '/api/v1/orgs/{org}/invitations': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** Invitations, newest first */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Invitations, newest first */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              invitations: {
                /** Format: uuid */
                id: string;
                email: string;
                /** @enum {string} */
                role: 'owner' | 'admin' | 'operator' | 'viewer';
                /** @enum {string} */
                state: 'pending' | 'accepted' | 'revoked' | 'expired';
                /** Format: date-time */
                createdAt: string;
                /** Format: date-time */
                expiresAt: string;
                acceptedAt: string | null;
                revokedAt: string | null;
              }[];
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    /** Invites someone by email at a role; answers the link (shown once) */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            /** Format: email */
            email: string;
            /** @enum {string} */
            role: 'owner' | 'admin' | 'operator' | 'viewer';
          };
        };
      };
      responses: {
        /** @description The invitation, its token and its link */
        201: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              invitation: {
                /** Format: uuid */
                id: string;
                email: string;
                /** @enum {string} */
                role: 'owner' | 'admin' | 'operator' | 'viewer';
                /** @enum {string} */
                state: 'pending' | 'accepted' | 'revoked' | 'expired';
                /** Format: date-time */
                createdAt: string;
                /** Format: date-time */
                expiresAt: string;
                acceptedAt: string | null;
                revokedAt: string | null;
              };
              /** @description The invitation token; in this answer only */
              token: string;
              /** @description The console link that accepts the invitation */
              link: string;
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/orgs/{org}/invitations/{id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    post?: never;
    /** Revokes an invitation */
    delete: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
          id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Done; no body */
        204: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `conflict`: the change contradicts the current state (a duplicate, the last owner, a used token) */
        409: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'conflict';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/invitations/accept': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /**
     * Accepts an invitation with its token; the caller's verified email must be the invited one
     * @description Accepting again an invitation this caller already accepted (also when their sign-in matched it by email) answers the same 200.
     */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            /** Format: starts_with */
            token: string;
          };
        };
      };
      responses: {
        /** @description The organisation joined, and the role in it */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              org: {
                /** Format: uuid */
                id: string;
              };
              /** @enum {string} */
              role: 'owner' | 'admin' | 'operator' | 'viewer';
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `gone`: an invitation already accepted, revoked or expired */
        410: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'gone';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/orgs/{org}/api-keys': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** API keys (never their secrets) */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description API keys, newest first */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              apiKeys: {
                /** Format: uuid */
                id: string;
                name: string;
                /** @description The start of the key (`svc_key_` and 8 hex characters), which names it */
                prefix: string;
                scopes: string[];
                /** Format: date-time */
                createdAt: string;
                lastUsedAt: string | null;
                revokedAt: string | null;
              }[];
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    /** Creates an API key; the key is in this answer only */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            name: string;
            scopes: ('sessions:mint' | 'robots:read')[];
          };
        };
      };
      responses: {
        /** @description The new key */
        201: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              apiKey: {
                /** Format: uuid */
                id: string;
                name: string;
                /** @description The start of the key (`svc_key_` and 8 hex characters), which names it */
                prefix: string;
                scopes: string[];
                /** Format: date-time */
                createdAt: string;
                lastUsedAt: string | null;
                revokedAt: string | null;
              };
              /** @description The key; in this answer only */
              key: string;
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/orgs/{org}/api-keys/{id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    post?: never;
    /** Revokes an API key */
    delete: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
          id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Done; no body */
        204: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/orgs/{org}/enrolment-tokens': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** Enrolment tokens, newest first (never their secrets) */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Tokens, newest first */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              enrolmentTokens: {
                /** Format: uuid */
                id: string;
                name: string | null;
                /** Format: date-time */
                createdAt: string;
                /** Format: date-time */
                expiresAt: string;
                /** @enum {string} */
                state: 'unused' | 'redeemed' | 'expired' | 'revoked';
                redeemedAt: string | null;
                /** @description The robot id that redeemed it */
                redeemedBy: string | null;
              }[];
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    /** Creates a one-time enrolment token for a robot; the token is in this answer only */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            name?: string;
            /** @default 24 */
            expiresInHours?: number;
          };
        };
      };
      responses: {
        /** @description The new token */
        201: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              enrolmentToken: {
                /** Format: uuid */
                id: string;
                name: string | null;
                /** Format: date-time */
                createdAt: string;
                /** Format: date-time */
                expiresAt: string;
                /** @enum {string} */
                state: 'unused' | 'redeemed' | 'expired' | 'revoked';
                redeemedAt: string | null;
                /** @description The robot id that redeemed it */
                redeemedBy: string | null;
              };
              /** @description The token; in this answer only */
              token: string;
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/orgs/{org}/enrolment-tokens/{id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    post?: never;
    /** Revokes an enrolment token that has not been used */
    delete: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
          id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Done; no body */
        204: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `conflict`: the change contradicts the current state (a duplicate, the last owner, a used token) */
        409: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'conflict';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/orgs/{org}/audit': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** The audit log, newest first; filter by action, actor id, target id and time; page with `before` */
    get: {
      parameters: {
        query?: {
          action?: string;
          actor?: string;
          target?: string;
          /** @description Entries at or after this time */
          since?: string;
          /** @description Entries before this time */
          until?: string;
          /** @description The `next` of the previous page */
          before?: number;
          limit?: number;
        };
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description One page of entries, newest first */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              entries: {
                id: number;
                /** Format: date-time */
                at: string;
                actor: {
                  /** @enum {string} */
                  kind: 'user' | 'api_key' | 'robot' | 'system';
                  id: string | null;
                };
                /** @description Dotted `noun.verb`, e.g. `membership.update` */
                action: string;
                target: {
                  kind: string | null;
                  id: string | null;
                };
                /** @description What changed; never a secret */
                detail: {
                  [key: string]: unknown;
                };
              }[];
              /** @description `before` for the next page; null on the last */
              next: string | null;
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/orgs/{org}/fleet/events': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Live fleet: the org's robots, then their changes, as server-sent events
     * @description Server-sent events (`text/event-stream`) over a plain GET, so a browser reads it with `fetch` and a streamed body (EventSource cannot send the `Authorization` header this API needs). Send `Authorization: Bearer <access token>` as to any endpoint (`x-svc-id-token` is not needed).
     *
     *     Each event is `event: <type>`, one `data: <JSON>` line and a blank line; the JSON's `type` is the same word. Lines starting with `:` are comments: `: heartbeat` comes every 15 s.
     *
     *     1. `snapshot` first: every robot of the org the caller may see, exactly as `GET /api/v1/robots?org=<org>` lists them (record, presence on this node, driver, last denial).
     *     2. Then changes, coalesced: at most one event per robot about every 100 ms, carrying the robot's whole newest state. `robot-added` (enrolled into the org), `robot-updated` (online or offline, announced, sessions or driver changed, renamed, grants changed, last denial remembered or cleared, last-seen time moved; an online robot's `lastSeenAt` moves about once a minute), `robot-removed` (deleted). Apply them to a map by `robotId`: an update of a robot not seen is an addition, a removal of one not seen does nothing.
     *     3. `end` when the server ends the stream: the caller's membership was removed, the org deleted, the access token expired, the client read too slowly, or the server is closing. Membership is checked again every 30 s and at once when it is removed through this node.
     *
     *     A caller holds at most 5 streams at once (429 `rate-limited` beyond). Presence is that of the node answering, as in `GET /api/v1/robots`.
     */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          org: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description The event stream: a `snapshot` event, then changes until `end` or the client leaves */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'text/event-stream':
              | {
                  /** @enum {string} */
                  type: 'snapshot';
                  /** Format: uuid */
                  orgId: string;
                  /** @description Every robot of the org, by id */
                  robots: {
                    robotId: string;
                    name: string | null;
                    /** @description Its organisation; null for a robot admitted by open dev enrolment */
                    orgId: string | null;
                    /** @description Whether a public grant lets everyone observe it */
                    public: boolean;
                    /** @description The strongest access a grant gives the caller */
                    access: ('observe' | 'drive') | null;
                    enrolledAt: string | null;
                    online: boolean;
                    lastSeenAt: string | null;
                    channels: {
                      id: number;
                      name: string;
                      /** @enum {string} */
                      kind: 'video' | 'sensor' | 'command';
                      codec: string;
                    }[];
                    candidates: {
                      address: string;
                      port: number;
                      /** @enum {string} */
                      family: 'ipv4' | 'ipv6';
                      /** @enum {string} */
                      kind: 'host' | 'mapped';
                    }[];
                    /** @description Whether the robot offers the cloud relay */
                    relay: boolean;
                    /** @description The transports the robot serves while online: `quic` (WebTransport, and the cloud relay) and `webrtc` (ICE and TURN); empty while offline */
                    backends: ('quic' | 'webrtc')[];
                    sessions: {
                      sessionId: string;
                      /** @enum {string} */
                      role: 'driver' | 'observer';
                      /**
                       * @description How the session's packets travel: straight between pilot and robot, or through svc-cloud's relay
                       * @enum {string}
                       */
                      path: 'direct' | 'relay';
                      /**
                       * @description What carries the session: WebTransport over QUIC (`quic`), or WebRTC data channels (`webrtc`)
                       * @enum {string}
                       */
                      backend: 'quic' | 'webrtc';
                    }[];
                    /** @description The session holding the driver slot, or null when nobody drives; who it is for is shown only to members (and API keys) of the robot's org */
                    driver: {
                      sessionId: string;
                      /** @description The user the session is for; null for an API key, nobody signed in, or hidden */
                      userId: string | null;
                      /** @description The user's display name, when known */
                      name: string | null;
                      /** @description The user's verified email, when known and the user is a member of the robot's org */
                      email: string | null;
                    } | null;
                    /** @description The last signalling denial under this id since the robot last connected; null when there was none (cleared when the robot next proves its key) */
                    lastDenial: {
                      /**
                       * @description `key-mismatch`: a connection proved another key than the enrolled one (delete the robot in the console and enrol again); `bad-signature`: its signature did not verify
                       * @enum {string}
                       */
                      reason: 'key-mismatch' | 'bad-signature';
                      /** Format: date-time */
                      at: string;
                    } | null;
                  }[];
                }
              | {
                  /** @enum {string} */
                  type: 'robot-added';
                  robot: {
                    robotId: string;
                    name: string | null;
                    /** @description Its organisation; null for a robot admitted by open dev enrolment */
                    orgId: string | null;
                    /** @description Whether a public grant lets everyone observe it */
                    public: boolean;
                    /** @description The strongest access a grant gives the caller */
                    access: ('observe' | 'drive') | null;
                    enrolledAt: string | null;
                    online: boolean;
                    lastSeenAt: string | null;
                    channels: {
                      id: number;
                      name: string;
                      /** @enum {string} */
                      kind: 'video' | 'sensor' | 'command';
                      codec: string;
                    }[];
                    candidates: {
                      address: string;
                      port: number;
                      /** @enum {string} */
                      family: 'ipv4' | 'ipv6';
                      /** @enum {string} */
                      kind: 'host' | 'mapped';
                    }[];
                    /** @description Whether the robot offers the cloud relay */
                    relay: boolean;
                    /** @description The transports the robot serves while online: `quic` (WebTransport, and the cloud relay) and `webrtc` (ICE and TURN); empty while offline */
                    backends: ('quic' | 'webrtc')[];
                    sessions: {
                      sessionId: string;
                      /** @enum {string} */
                      role: 'driver' | 'observer';
                      /**
                       * @description How the session's packets travel: straight between pilot and robot, or through svc-cloud's relay
                       * @enum {string}
                       */
                      path: 'direct' | 'relay';
                      /**
                       * @description What carries the session: WebTransport over QUIC (`quic`), or WebRTC data channels (`webrtc`)
                       * @enum {string}
                       */
                      backend: 'quic' | 'webrtc';
                    }[];
                    /** @description The session holding the driver slot, or null when nobody drives; who it is for is shown only to members (and API keys) of the robot's org */
                    driver: {
                      sessionId: string;
                      /** @description The user the session is for; null for an API key, nobody signed in, or hidden */
                      userId: string | null;
                      /** @description The user's display name, when known */
                      name: string | null;
                      /** @description The user's verified email, when known and the user is a member of the robot's org */
                      email: string | null;
                    } | null;
                    /** @description The last signalling denial under this id since the robot last connected; null when there was none (cleared when the robot next proves its key) */
                    lastDenial: {
                      /**
                       * @description `key-mismatch`: a connection proved another key than the enrolled one (delete the robot in the console and enrol again); `bad-signature`: its signature did not verify
                       * @enum {string}
                       */
                      reason: 'key-mismatch' | 'bad-signature';
                      /** Format: date-time */
                      at: string;
                    } | null;
                  };
                }
              | {
                  /** @enum {string} */
                  type: 'robot-updated';
                  robot: {
                    robotId: string;
                    name: string | null;
                    /** @description Its organisation; null for a robot admitted by open dev enrolment */
                    orgId: string | null;
                    /** @description Whether a public grant lets everyone observe it */
                    public: boolean;
                    /** @description The strongest access a grant gives the caller */
                    access: ('observe' | 'drive') | null;
                    enrolledAt: string | null;
                    online: boolean;
                    lastSeenAt: string | null;
                    channels: {
                      id: number;
                      name: string;
                      /** @enum {string} */
                      kind: 'video' | 'sensor' | 'command';
                      codec: string;
                    }[];
                    candidates: {
                      address: string;
                      port: number;
                      /** @enum {string} */
                      family: 'ipv4' | 'ipv6';
                      /** @enum {string} */
                      kind: 'host' | 'mapped';
                    }[];
                    /** @description Whether the robot offers the cloud relay */
                    relay: boolean;
                    /** @description The transports the robot serves while online: `quic` (WebTransport, and the cloud relay) and `webrtc` (ICE and TURN); empty while offline */
                    backends: ('quic' | 'webrtc')[];
                    sessions: {
                      sessionId: string;
                      /** @enum {string} */
                      role: 'driver' | 'observer';
                      /**
                       * @description How the session's packets travel: straight between pilot and robot, or through svc-cloud's relay
                       * @enum {string}
                       */
                      path: 'direct' | 'relay';
                      /**
                       * @description What carries the session: WebTransport over QUIC (`quic`), or WebRTC data channels (`webrtc`)
                       * @enum {string}
                       */
                      backend: 'quic' | 'webrtc';
                    }[];
                    /** @description The session holding the driver slot, or null when nobody drives; who it is for is shown only to members (and API keys) of the robot's org */
                    driver: {
                      sessionId: string;
                      /** @description The user the session is for; null for an API key, nobody signed in, or hidden */
                      userId: string | null;
                      /** @description The user's display name, when known */
                      name: string | null;
                      /** @description The user's verified email, when known and the user is a member of the robot's org */
                      email: string | null;
                    } | null;
                    /** @description The last signalling denial under this id since the robot last connected; null when there was none (cleared when the robot next proves its key) */
                    lastDenial: {
                      /**
                       * @description `key-mismatch`: a connection proved another key than the enrolled one (delete the robot in the console and enrol again); `bad-signature`: its signature did not verify
                       * @enum {string}
                       */
                      reason: 'key-mismatch' | 'bad-signature';
                      /** Format: date-time */
                      at: string;
                    } | null;
                  };
                }
              | {
                  /** @enum {string} */
                  type: 'robot-removed';
                  robotId: string;
                  /**
                   * @description `deleted`: the robot (or its record) was deleted; `left-org`: it now belongs to no org or another
                   * @enum {string}
                   */
                  reason: 'deleted' | 'left-org';
                }
              | {
                  /** @enum {string} */
                  type: 'end';
                  /**
                   * @description `membership-removed`: the caller is no longer a member (do not reconnect); `org-deleted`: the org is gone (do not reconnect); `credential-expired`: the access token expired (reconnect with a fresh one); `too-slow`: the client did not read fast enough (reconnect); `server-closing`: the server is shutting down (reconnect with backoff)
                   * @enum {string}
                   */
                  reason:
                    | 'membership-removed'
                    | 'org-deleted'
                    | 'credential-expired'
                    | 'too-slow'
                    | 'server-closing';
                  message: string;
                };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/enrol': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /** A robot redeems a one-time enrolment token with its Ed25519 public key and joins the token's organisation */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            robotId: string;
            publicKey: string;
            token: string;
          };
        };
      };
      responses: {
        /** @description The robot belongs to the token's organisation with the key it presented */
        201: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              robotId: string;
              /** Format: uuid */
              orgId: string;
              /** Format: date-time */
              enrolledAt: string;
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `enrolment-token-invalid`: `POST /api/v1/enrol` with a token that is unknown or not an enrolment token (`svc_enr_...`) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'enrolment-token-invalid';
                message: string;
              };
            };
          };
        };
        /** @description `conflict`: the change contradicts the current state (a duplicate, the last owner, a used token); `robot-enrolled`: the robot id is enrolled in another organisation, or with another key: delete the robot in the console and enrol again */
        409: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'conflict' | 'robot-enrolled';
                message: string;
              };
            };
          };
        };
        /** @description `enrolment-token-expired`: the enrolment token's lifetime is over; a new one is needed; `enrolment-token-revoked`: an admin revoked the enrolment token; a new one is needed; `enrolment-token-used`: the enrolment token already enrolled a robot; a new one is needed */
        410: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'enrolment-token-expired' | 'enrolment-token-revoked' | 'enrolment-token-used';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/robots': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /**
     * Robots the caller may see (without credentials: robots with a public grant)
     * @description With `?org=<id>`, only the robots of that organisation (the first event of `GET /api/v1/orgs/{org}/fleet/events` lists the same).
     */
    get: {
      parameters: {
        query?: {
          /** @description Only the robots of this organisation, of which the caller must be a member (an API key: its own org); another is 404 `not-found` */
          org?: string;
        };
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Robots, by id, with their presence */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              robots: {
                robotId: string;
                name: string | null;
                /** @description Its organisation; null for a robot admitted by open dev enrolment */
                orgId: string | null;
                /** @description Whether a public grant lets everyone observe it */
                public: boolean;
                /** @description The strongest access a grant gives the caller */
                access: ('observe' | 'drive') | null;
                enrolledAt: string | null;
                online: boolean;
                lastSeenAt: string | null;
                channels: {
                  id: number;
                  name: string;
                  /** @enum {string} */
                  kind: 'video' | 'sensor' | 'command';
                  codec: string;
                }[];
                candidates: {
                  address: string;
                  port: number;
                  /** @enum {string} */
                  family: 'ipv4' | 'ipv6';
                  /** @enum {string} */
                  kind: 'host' | 'mapped';
                }[];
                /** @description Whether the robot offers the cloud relay */
                relay: boolean;
                /** @description The transports the robot serves while online: `quic` (WebTransport, and the cloud relay) and `webrtc` (ICE and TURN); empty while offline */
                backends: ('quic' | 'webrtc')[];
                sessions: {
                  sessionId: string;
                  /** @enum {string} */
                  role: 'driver' | 'observer';
                  /**
                   * @description How the session's packets travel: straight between pilot and robot, or through svc-cloud's relay
                   * @enum {string}
                   */
                  path: 'direct' | 'relay';
                  /**
                   * @description What carries the session: WebTransport over QUIC (`quic`), or WebRTC data channels (`webrtc`)
                   * @enum {string}
                   */
                  backend: 'quic' | 'webrtc';
                }[];
                /** @description The session holding the driver slot, or null when nobody drives; who it is for is shown only to members (and API keys) of the robot's org */
                driver: {
                  sessionId: string;
                  /** @description The user the session is for; null for an API key, nobody signed in, or hidden */
                  userId: string | null;
                  /** @description The user's display name, when known */
                  name: string | null;
                  /** @description The user's verified email, when known and the user is a member of the robot's org */
                  email: string | null;
                } | null;
                /** @description The last signalling denial under this id since the robot last connected; null when there was none (cleared when the robot next proves its key) */
                lastDenial: {
                  /**
                   * @description `key-mismatch`: a connection proved another key than the enrolled one (delete the robot in the console and enrol again); `bad-signature`: its signature did not verify
                   * @enum {string}
                   */
                  reason: 'key-mismatch' | 'bad-signature';
                  /** Format: date-time */
                  at: string;
                } | null;
              }[];
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/robots/{robot}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** One robot the caller may see, with its presence (online, channels, candidates, sessions) */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          robot: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description The robot and its presence */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              robot: {
                robotId: string;
                name: string | null;
                /** @description Its organisation; null for a robot admitted by open dev enrolment */
                orgId: string | null;
                /** @description Whether a public grant lets everyone observe it */
                public: boolean;
                /** @description The strongest access a grant gives the caller */
                access: ('observe' | 'drive') | null;
                enrolledAt: string | null;
                online: boolean;
                lastSeenAt: string | null;
                channels: {
                  id: number;
                  name: string;
                  /** @enum {string} */
                  kind: 'video' | 'sensor' | 'command';
                  codec: string;
                }[];
                candidates: {
                  address: string;
                  port: number;
                  /** @enum {string} */
                  family: 'ipv4' | 'ipv6';
                  /** @enum {string} */
                  kind: 'host' | 'mapped';
                }[];
                /** @description Whether the robot offers the cloud relay */
                relay: boolean;
                /** @description The transports the robot serves while online: `quic` (WebTransport, and the cloud relay) and `webrtc` (ICE and TURN); empty while offline */
                backends: ('quic' | 'webrtc')[];
                sessions: {
                  sessionId: string;
                  /** @enum {string} */
                  role: 'driver' | 'observer';
                  /**
                   * @description How the session's packets travel: straight between pilot and robot, or through svc-cloud's relay
                   * @enum {string}
                   */
                  path: 'direct' | 'relay';
                  /**
                   * @description What carries the session: WebTransport over QUIC (`quic`), or WebRTC data channels (`webrtc`)
                   * @enum {string}
                   */
                  backend: 'quic' | 'webrtc';
                }[];
                /** @description The session holding the driver slot, or null when nobody drives; who it is for is shown only to members (and API keys) of the robot's org */
                driver: {
                  sessionId: string;
                  /** @description The user the session is for; null for an API key, nobody signed in, or hidden */
                  userId: string | null;
                  /** @description The user's display name, when known */
                  name: string | null;
                  /** @description The user's verified email, when known and the user is a member of the robot's org */
                  email: string | null;
                } | null;
                /** @description The last signalling denial under this id since the robot last connected; null when there was none (cleared when the robot next proves its key) */
                lastDenial: {
                  /**
                   * @description `key-mismatch`: a connection proved another key than the enrolled one (delete the robot in the console and enrol again); `bad-signature`: its signature did not verify
                   * @enum {string}
                   */
                  reason: 'key-mismatch' | 'bad-signature';
                  /** Format: date-time */
                  at: string;
                } | null;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    post?: never;
    /**
     * Deletes a robot (admin of its org)
     * @description Its sessions end and its signalling connection is refused (`robot-deleted`).
     */
    delete: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          robot: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Done; no body */
        204: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    options?: never;
    head?: never;
    /** Renames a robot (admin of its org) */
    patch: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          robot: string;
        };
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            /** @description The new name; null removes it */
            name: string | null;
          };
        };
      };
      responses: {
        /** @description The robot with its new name */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              robot: {
                robotId: string;
                name: string | null;
                /** @description Its organisation; null for a robot admitted by open dev enrolment */
                orgId: string | null;
                /** @description Whether a public grant lets everyone observe it */
                public: boolean;
                /** @description The strongest access a grant gives the caller */
                access: ('observe' | 'drive') | null;
                enrolledAt: string | null;
                online: boolean;
                lastSeenAt: string | null;
                channels: {
                  id: number;
                  name: string;
                  /** @enum {string} */
                  kind: 'video' | 'sensor' | 'command';
                  codec: string;
                }[];
                candidates: {
                  address: string;
                  port: number;
                  /** @enum {string} */
                  family: 'ipv4' | 'ipv6';
                  /** @enum {string} */
                  kind: 'host' | 'mapped';
                }[];
                /** @description Whether the robot offers the cloud relay */
                relay: boolean;
                /** @description The transports the robot serves while online: `quic` (WebTransport, and the cloud relay) and `webrtc` (ICE and TURN); empty while offline */
                backends: ('quic' | 'webrtc')[];
                sessions: {
                  sessionId: string;
                  /** @enum {string} */
                  role: 'driver' | 'observer';
                  /**
                   * @description How the session's packets travel: straight between pilot and robot, or through svc-cloud's relay
                   * @enum {string}
                   */
                  path: 'direct' | 'relay';
                  /**
                   * @description What carries the session: WebTransport over QUIC (`quic`), or WebRTC data channels (`webrtc`)
                   * @enum {string}
                   */
                  backend: 'quic' | 'webrtc';
                }[];
                /** @description The session holding the driver slot, or null when nobody drives; who it is for is shown only to members (and API keys) of the robot's org */
                driver: {
                  sessionId: string;
                  /** @description The user the session is for; null for an API key, nobody signed in, or hidden */
                  userId: string | null;
                  /** @description The user's display name, when known */
                  name: string | null;
                  /** @description The user's verified email, when known and the user is a member of the robot's org */
                  email: string | null;
                } | null;
                /** @description The last signalling denial under this id since the robot last connected; null when there was none (cleared when the robot next proves its key) */
                lastDenial: {
                  /**
                   * @description `key-mismatch`: a connection proved another key than the enrolled one (delete the robot in the console and enrol again); `bad-signature`: its signature did not verify
                   * @enum {string}
                   */
                  reason: 'key-mismatch' | 'bad-signature';
                  /** Format: date-time */
                  at: string;
                } | null;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    trace?: never;
  };
  '/api/v1/robots/{robot}/sessions': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** A robot's open sessions, with who holds them (admin of its org) */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          robot: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Open sessions on this node (none while the robot is offline) */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              sessions: {
                sessionId: string;
                /** @enum {string} */
                role: 'driver' | 'observer';
                /** @description Who the session is for: the token's `sub` */
                sub: string;
                /** @description Whether the robot reported it running */
                started: boolean;
                /**
                 * @description How its packets travel: straight between pilot and robot, or through a relay (svc-cloud's, or a TURN server's on WebRTC)
                 * @enum {string}
                 */
                path: 'direct' | 'relay';
                /**
                 * @description What carries it: WebTransport over QUIC (`quic`), or WebRTC data channels (`webrtc`)
                 * @enum {string}
                 */
                backend: 'quic' | 'webrtc';
              }[];
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/robots/{robot}/sessions/{session}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    post?: never;
    /** Ends a session on a robot now; the robot refuses its token until it expires (admin of its org) */
    delete: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          robot: string;
          session: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Done; no body */
        204: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/robots/{robot}/grants': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** A robot's grants (admin of its org) */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          robot: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Grants, oldest first */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              grants: {
                /** Format: uuid */
                id: string;
                robotId: string;
                /** @description A user, an organisation, or everyone */
                grantee:
                  | {
                      /** @enum {string} */
                      kind: 'user';
                      /** Format: uuid */
                      userId: string;
                    }
                  | {
                      /** @enum {string} */
                      kind: 'org';
                      /** Format: uuid */
                      orgId: string;
                    }
                  | {
                      /** @enum {string} */
                      kind: 'public';
                    };
                /** @enum {string} */
                access: 'observe' | 'drive';
                /** Format: date-time */
                createdAt: string;
              }[];
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    /** Grants a user, an org or everyone (public) observe or drive on a robot */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          robot: string;
        };
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            grantee:
              | {
                  /** @enum {string} */
                  kind: 'user';
                  /** Format: uuid */
                  userId: string;
                }
              | {
                  /** @enum {string} */
                  kind: 'org';
                  /** Format: uuid */
                  orgId: string;
                }
              | {
                  /** @enum {string} */
                  kind: 'public';
                };
            /** @enum {string} */
            access: 'observe' | 'drive';
          };
        };
      };
      responses: {
        /** @description The new grant */
        201: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              grant: {
                /** Format: uuid */
                id: string;
                robotId: string;
                /** @description A user, an organisation, or everyone */
                grantee:
                  | {
                      /** @enum {string} */
                      kind: 'user';
                      /** Format: uuid */
                      userId: string;
                    }
                  | {
                      /** @enum {string} */
                      kind: 'org';
                      /** Format: uuid */
                      orgId: string;
                    }
                  | {
                      /** @enum {string} */
                      kind: 'public';
                    };
                /** @enum {string} */
                access: 'observe' | 'drive';
                /** Format: date-time */
                createdAt: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `conflict`: the change contradicts the current state (a duplicate, the last owner, a used token) */
        409: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'conflict';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/robots/{robot}/grants/{id}': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    post?: never;
    /** Removes a grant */
    delete: {
      parameters: {
        query?: never;
        header?: never;
        path: {
          robot: string;
          id: string;
        };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description Done; no body */
        204: {
          headers: {
            [name: string]: unknown;
          };
          content?: never;
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/api/v1/session-tokens': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    get?: never;
    put?: never;
    /** Mints a pilot session token (ES256 JWT) to drive or observe one robot; API keys need the sessions:mint scope */
    post: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody: {
        content: {
          'application/json': {
            robotId: string;
            /** @enum {string} */
            scope: 'drive' | 'observe';
            ttlSeconds?: number;
            /** @description API keys only: the customer's own id of the person the token is for, recorded as `act` and in the audit log */
            subject?: string;
          };
        };
      };
      responses: {
        /** @description The token and what it allows */
        201: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              /** @description The pilot session token (an ES256 JWT) */
              token: string;
              robotId: string;
              /** @enum {string} */
              scope: 'drive' | 'observe';
              /** Format: date-time */
              expiresAt: string;
              /** @description The token's id, as in the audit log */
              jti: string;
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        400: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `unauthenticated`: no credential where one is needed, or one that is not valid (bad signature, expired, wrong issuer or audience, unknown or revoked API key) */
        401: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'unauthenticated';
                message: string;
              };
            };
          };
        };
        /** @description `forbidden`: the caller's role, grants or API key scopes do not allow this; `not-registered`: a valid login that has never been through `GET /api/v1/me`: sign in through the console first */
        403: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'forbidden' | 'not-registered';
                message: string;
              };
            };
          };
        };
        /** @description `not-found`: no such endpoint or resource, or one in an organisation the caller is not in */
        404: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'not-found';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        413: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `invalid-request`: the path, query, headers or body do not fit the endpoint's schema; the message names each bad field (413: a body over 64 KiB, 415: a body that is not JSON) */
        415: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'invalid-request';
                message: string;
              };
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
        /** @description `provider-unavailable`: the identity provider (or the invitation provider) could not be reached */
        502: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'provider-unavailable';
                message: string;
              };
            };
          };
        };
      };
    };
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
  '/.well-known/svc-session-jwks.json': {
    parameters: {
      query?: never;
      header?: never;
      path?: never;
      cookie?: never;
    };
    /** The public keys of pilot session tokens (ES256), for robots and the signalling server */
    get: {
      parameters: {
        query?: never;
        header?: never;
        path?: never;
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        /** @description The public keys, newest first */
        200: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              keys: {
                /** @description `EC` */
                kty?: string;
                /** @description `P-256` */
                crv?: string;
                x?: string;
                y?: string;
                /** @description The key's RFC 7638 thumbprint */
                kid: string;
                /** @enum {string} */
                alg: 'ES256';
                /** @enum {string} */
                use: 'sig';
              }[];
            };
          };
        };
        /** @description `rate-limited`: too many requests from this credential or address, or too many open fleet streams; retry later */
        429: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'rate-limited';
                message: string;
              };
            };
          };
        };
        /** @description `internal`: the service failed to answer; the fault is logged */
        500: {
          headers: {
            [name: string]: unknown;
          };
          content: {
            'application/json': {
              error: {
                /** @enum {string} */
                code: 'internal';
                message: string;
              };
            };
          };
        };
      };
    };
    put?: never;
    post?: never;
    delete?: never;
    options?: never;
    head?: never;
    patch?: never;
    trace?: never;
  };
}
export type webhooks = Record<string, never>;
export interface components {
  schemas: {
    /** @description Every error code of the API, with the HTTP status it is answered with */
    ErrorCode: string &
      (
        | 'invalid-request'
        | 'id-token-rejected'
        | 'unauthenticated'
        | 'enrolment-token-invalid'
        | 'not-registered'
        | 'forbidden'
        | 'not-found'
        | 'conflict'
        | 'robot-enrolled'
        | 'gone'
        | 'enrolment-token-used'
        | 'enrolment-token-expired'
        | 'enrolment-token-revoked'
        | 'rate-limited'
        | 'internal'
        | 'provider-unavailable'
      );
    /** @description An error */
    Error: {
      error: {
        /** @enum {string} */
        code:
          | 'invalid-request'
          | 'id-token-rejected'
          | 'unauthenticated'
          | 'enrolment-token-invalid'
          | 'not-registered'
          | 'forbidden'
          | 'not-found'
          | 'conflict'
          | 'robot-enrolled'
          | 'gone'
          | 'enrolment-token-used'
          | 'enrolment-token-expired'
          | 'enrolment-token-revoked'
          | 'rate-limited'
          | 'internal'
          | 'provider-unavailable';
        /** @description What was wrong and what to do; never contains a secret */
        message: string;
      };
    };
  };
  responses: never;
  parameters: never;
  requestBodies: never;
  headers: never;
  pathItems: never;
}
export type $defs = Record<string, never>;
export type operations = Record<string, never>;
