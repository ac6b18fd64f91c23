"""The refusals of bad input, each naming where it was given and why: a spec file's key (SpecError), a Hugging Face
config's key (ImportRefused), a deployment's flag or key (DeploymentError).

Every input module raises these and none is raised by importing another input module, so the modules of
kvwall.inputs import each other in one direction only."""

from __future__ import annotations

from pathlib import Path


class SpecError(ValueError):
    """Bad input: which file, which key, and why."""

    def __init__(self, file: str | Path, key: str, reason: str):
        self.file, self.key, self.reason = str(file), key, reason
        super().__init__(f"{self.file}: {key or '(top level)'}: {reason}")


class ImportRefused(ValueError):
    """A config kvwall cannot model: which file, which key, and why."""

    def __init__(self, file: str | Path, key: str, reason: str):
        self.file, self.key, self.reason = str(file), key, reason
        super().__init__(f"{self.file}: {key}: {reason}")


class DeploymentError(ValueError):
    """A deployment that cannot be built: where it was given (flag or file and key) and why."""

    def __init__(self, where: str, reason: str):
        self.where, self.reason = where, reason
        super().__init__(f"{where}: {reason}")
