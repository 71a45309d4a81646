"""The lowest floor: small helpers every app may use; imports no app and nothing from config/."""
