"""The build's console (`logger: [kvwall]` in profiles/default): one line per finished job, then warnings and errors.

Snakemake finds this package by its name (``snakemake_logger_plugin_<name>``, interface
snakemake-interface-logger-plugins). Everything else a build logs (the job plan, each job's inputs, progress,
timings) still goes to the run log under .snakemake/log/; a job's own output goes to its log in logs/.
"""

import logging
from pathlib import Path
import sys

from snakemake.logging import DefaultFormatter, show_logs
from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent


def job_name(rule: str, outputs: list[str]) -> str:
    """``rule: first output (+ how many more)``."""
    more = f" (+{len(outputs) - 1})" if len(outputs) > 1 else ""
    return f"{rule}: {outputs[0] if outputs else '(no output)'}{more}"


def job_error_lines(record: logging.LogRecord, show_failed_logs: bool) -> list[str]:
    """A failed job in a few lines: its rule and outputs, the message, and where its log is."""
    lines = [f"Error in rule {record.rule_name} (job {record.jobid}): {', '.join(record.output)}"]
    if record.rule_msg:
        lines.append(f"    message: {record.rule_msg}")
    if record.log:
        lines.append(f"    log: {', '.join(record.log)} (check log file(s) for error details)")
    lines.extend(f"    {key}: {value}" for key, value in record.aux.items())
    if show_failed_logs and record.log:
        lines.extend(show_logs(record.log))
    elif record.log:
        lines.extend(log_tail(path) for path in record.log)
    return lines


#: How much of a failed job's log the console shows without --show-failed-logs: its error is in the last lines.
LOG_TAIL_LINES = 20


def log_tail(path: str) -> str:
    """The last lines of a failed job's log, indented under its error (the whole log stays in the file)."""
    try:
        tail = Path(path).read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
    except OSError:
        return f"    (log {path} could not be read)"
    return "\n".join(f"    | {line}" for line in tail)


class LogHandler(LogHandlerBase):
    """Prints a job when it finishes (a dry run: when it is planned), and every record of level WARNING or above."""

    def __post_init__(self) -> None:
        self.stream = sys.stdout if self.common_settings.stdout else sys.stderr
        self.jobs: dict[int, tuple[str, list[str]]] = {}
        self.finished: list[int] = []
        self.errors = DefaultFormatter(self.common_settings.quiet, self.common_settings.show_failed_logs)

    def emit(self, record: logging.LogRecord) -> None:
        event = getattr(record, "event", None)
        if event == LogEvent.JOB_INFO:
            self.jobs[record.jobid] = (record.rule_name, list(record.output))
            if self.common_settings.dryrun:
                self.write([job_name(*self.jobs[record.jobid])])
        elif event == LogEvent.JOB_FINISHED:
            self.finished.append(record.job_id)
        elif event == LogEvent.PROGRESS:
            done = record.done - len(self.finished)
            # a job announced without JOB_INFO (none in this workflow) is named by its id
            names = [job_name(*self.jobs.pop(job, (f"job {job}", []))) for job in self.finished]
            self.write([f"[{done + i}/{record.total}] {name}" for i, name in enumerate(names, 1)])
            self.finished = []
        elif event == LogEvent.JOB_ERROR:
            self.write(job_error_lines(record, self.common_settings.show_failed_logs))
        elif record.levelno >= logging.WARNING:
            self.write([self.errors.format(record)])

    def write(self, lines: list[str]) -> None:
        for line in lines:
            self.stream.write(line + "\n")
        self.stream.flush()

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return True

    @property
    def has_formatter(self) -> bool:
        return True

    @property
    def needs_rulegraph(self) -> bool:
        return False
