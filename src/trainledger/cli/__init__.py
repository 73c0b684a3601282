"""The `trainledger` command; subcommands are thin calls into the packages."""
