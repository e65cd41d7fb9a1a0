"""One module per group of commands; attncli.commands.common holds what they share."""
