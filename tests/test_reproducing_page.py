"""Every number on the "Reproducing the results" page is glued by the notebook it names."""

import re

from tests.notebook_files import ROOT, code_cells, read

PAGE = (ROOT / "book" / "reproducing.md").read_text()
REFERENCES = re.findall(r"\{glue:text\}`\.\./(notebooks/[\w.]+\.ipynb)::(\w+):[^`]+`", PAGE)


def glued_keys(source: str) -> set[str]:
    """Keys passed to glue(...), with f-string loops over known names expanded by pattern."""
    return set(re.findall(r'glue\(f?"([\w{}]+)"', source))


def test_the_page_pastes_numbers():
    assert len(REFERENCES) >= 10


def test_every_pasted_key_is_glued_by_its_notebook():
    for notebook, key in REFERENCES:
        source = "\n".join(cell.source for cell in code_cells(read(ROOT / notebook)))
        patterns = [re.sub(r"\\\{\w+\\\}", r"\\w+", re.escape(k)) for k in glued_keys(source)]
        assert any(re.fullmatch(p, key) for p in patterns), f"{notebook} never glues {key!r}"


RECORDS = re.findall(r"```\{experiment-results\} \.\./(results/[\w.-]+\.json)", PAGE)


def test_long_runs_are_tables_made_from_the_records_their_commands_wrote():
    from attnlab.experiments import record

    assert len(RECORDS) >= 4
    for path in RECORDS:
        data = record.load(ROOT / path)
        module = __import__(f"attnlab.experiments.{data['experiment'].replace('-', '_')}", fromlist=["markdown"])
        text = module.markdown(data)
        # the page names the command that wrote the file, and the table ends with where it ran
        assert f"--json {path}" in data["command"], (path, data["command"])
        assert data["command"].removeprefix("python ") in " ".join(PAGE.split()), data["command"]
        assert text.endswith(record.provenance(data)) and data["date"] in text


def test_no_output_is_pasted_by_hand():
    # a long run's output was once pasted with its date; dates now come only from the records
    assert not re.search(r"\b20\d\d-\d\d-\d\d\b", PAGE)
