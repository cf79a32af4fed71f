"""What transcript items read: the transcript record, the helpers validators call on it (says, called ...),
whether an answer asserts a fact, and the observation check."""
