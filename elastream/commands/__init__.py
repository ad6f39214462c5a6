"""Sub-commands of the `elastream` CLI."""
