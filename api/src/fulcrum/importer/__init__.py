"""Import an existing LVS set-up: keepalived.conf or ipvsadm rules into Fulcrum's model.

`import_text` parses, maps and validates; it never touches a database or the kernel. The result
holds the services, VIP groups and node settings that would be imported and a report, line by
line, of what became of every directive.
"""

from __future__ import annotations

from enum import StrEnum

from fulcrum.importer import ipvsadm, keepalived_mapper, keepalived_parser, limits
from fulcrum.importer.draft import ImportResult, assemble
from fulcrum.importer.limits import ImportRejected
from fulcrum.importer.report import Outcome, Report, ReportLine

__all__ = ["ImportFormat", "ImportRejected", "ImportResult", "Outcome", "ReportLine", "detect", "import_text"]


class ImportFormat(StrEnum):
    AUTO = "auto"
    KEEPALIVED = "keepalived"
    IPVSADM = "ipvsadm"


def detect(text: str) -> ImportFormat:
    """ipvsadm rules start their lines with -A/-a (or `ipvsadm`); anything else is keepalived's."""
    for line in text[:100_000].splitlines():
        word = line.strip().split(" ", 1)[0]
        if word in ("-A", "-a", "-E", "-e", "--add-service", "--add-server", "ipvsadm"):
            return ImportFormat.IPVSADM
        if word and word[0] not in "#!" and word not in ("echo", '"'):
            return ImportFormat.KEEPALIVED
    return ImportFormat.KEEPALIVED


def import_text(fmt: ImportFormat, text: str, includes: dict[str, str] | None = None) -> ImportResult:
    """Parse and map `text`; raises ImportRejected for input that cannot be read at all."""
    report = Report()
    limits.check_text("text", "the configuration", text)
    if fmt == ImportFormat.AUTO:
        fmt = detect(text)
    if fmt == ImportFormat.IPVSADM:
        if includes:
            raise ImportRejected("includes", "ipvsadm rules have no includes")
        draft, files = ipvsadm.map_ipvsadm(text, report)
    else:
        directives, files = keepalived_parser.parse(text, includes or {}, report)
        draft = keepalived_mapper.map_keepalived(directives, report)
    return assemble(fmt.value, draft, report, files)
