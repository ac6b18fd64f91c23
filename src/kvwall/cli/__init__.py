"""The `kvwall` command: its subcommands, the answers it prints, the eight design rules, and the benchmark."""
