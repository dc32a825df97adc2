/** A button whose action asks first: destructive actions (revoke, remove, delete) confirm in a dialog. */
import { Button, type ButtonProps, Group, Modal, Text } from '@mantine/core';
import { type ReactNode, useState } from 'react';

/** Props of {@link ConfirmButton}. */
export interface ConfirmButtonProps extends ButtonProps {
  /** The button's text, e.g. "Revoke". */
  readonly label: string;
  /** An accessible name when the label alone is ambiguous in a list, e.g. "Revoke token build-bot". */
  readonly ariaLabel?: string;
  /** The dialog's title and text. */
  readonly title: string;
  readonly message: ReactNode;
  /** The confirming button's text (default: the label). */
  readonly confirmLabel?: string;
  readonly onConfirm: () => void;
  readonly loading?: boolean;
}

/** A button that opens a confirmation dialog before `onConfirm`. */
export function ConfirmButton(props: ConfirmButtonProps): ReactNode {
  const { label, ariaLabel, title, message, confirmLabel, onConfirm, loading, ...button } = props;
  const [open, setOpen] = useState(false);
  return (
    <>
      <Button
        color="red"
        variant="light"
        size="xs"
        aria-label={ariaLabel}
        {...button}
        onClick={() => setOpen(true)}
      >
        {label}
      </Button>
      <Modal opened={open} onClose={() => setOpen(false)} title={title} centered>
        <Text mb="md">{message}</Text>
        <Group justify="flex-end">
          <Button variant="default" onClick={() => setOpen(false)}>
            Cancel
          </Button>
          <Button
            color="red"
            loading={loading ?? false}
            onClick={() => {
              setOpen(false);
              onConfirm();
            }}
          >
            {confirmLabel ?? label}
          </Button>
        </Group>
      </Modal>
    </>
  );
}
