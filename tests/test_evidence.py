"""No artifact mixes evidence classes: every table folder holds one class, side-by-side views mark each column."""

import re

import pytest

from kvwall.render import SIDE_BY_SIDE
from kvwall.inputs.specs import EVIDENCE_CLASSES
from kvwall.tables import ARTIFACTS, builder


@pytest.mark.parametrize("artifact", sorted(ARTIFACTS))
def test_value_columns_have_one_class_matching_the_folder(catalog, selections, artifact):
    folder = artifact.split("/")[0]
    table = builder(artifact)(catalog, selections)
    classes = {c.evidence for c in table.columns if c.evidence}
    if folder in SIDE_BY_SIDE:
        assert classes <= set(EVIDENCE_CLASSES) and len(classes) >= 2
    else:
        assert classes == {folder}


def test_committed_markdown_declares_its_folder_class(root):
    for path in sorted((root / "tables").glob("*/*.md")):
        folder = path.parent.name
        text = path.read_text(encoding="utf-8")
        header = next(line for line in text.splitlines() if line.startswith("| "))
        if folder in SIDE_BY_SIDE:
            labelled = [cell for cell in header.strip("| ").split(" | ") if re.search(r"\[(%s)\]" % "|".join(EVIDENCE_CLASSES), cell)]
            assert labelled, f"{path}: side-by-side view without class marks"
        else:
            assert f"Evidence class: **{folder}**." in text, f"{path}: does not declare class {folder}"
            assert folder in EVIDENCE_CLASSES


def test_every_input_file_declares_one_class(root):
    import yaml

    for path in sorted((root / "config").rglob("*.yaml")):
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        if path.relative_to(root / "config").as_posix() == "config.yaml":
            continue  # the workflow's own settings: which rows each table shows, no numbers
        assert document.get("evidence") in EVIDENCE_CLASSES, f"{path}: no single evidence class"
