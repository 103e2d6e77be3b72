-- Fair share (issue 25): a namespace an admin took back from the user who claimed it says why.
ALTER TABLE namespaces ADD COLUMN reserved_reason text;
