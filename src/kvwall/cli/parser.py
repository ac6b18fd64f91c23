"""The command line's parser: a mistake in the arguments is one line naming the command, with where to read its usage."""

from __future__ import annotations

import argparse


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on standard error, exit status 2; its subcommands' parsers are
    of this class too."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")
