"""The command line's parser: a mistake in the arguments is one line naming the command, with where to read its
usage; its help ends with the line that names the command's documentation page (kvwall.cli.documentation)."""

from __future__ import annotations

import argparse

from kvwall.cli.documentation import documentation_line


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on standard error, exit status 2, and whose help ends naming its
    documentation page; its subcommands' parsers are of this class too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def format_help(self) -> str:
        line = documentation_line(self.prog)
        return super().format_help() + ("" if line is None else f"\n{line}\n")
