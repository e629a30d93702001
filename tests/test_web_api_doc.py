"""protocols/api.md is the route table: every route the app mounts (whichever module declares it) is
documented there, and the file is what ``python -m meshnode.faces.web.apidoc`` writes today."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from meshnode.faces.web import apidoc
from meshnode.faces.web.app import all_endpoints

API_MD = Path(__file__).resolve().parents[1] / "protocols" / "api.md"


def test_every_route_is_documented_with_its_arguments():
    text = API_MD.read_text(encoding="utf-8")
    routes = all_endpoints()
    assert len(routes) > 30  # the whole table, not a stub's
    missing = [f"{ep.method} {ep.path}" for ep in routes if f"### {ep.method} `{ep.path}`\n" not in text]
    assert not missing, f"not in protocols/api.md (regenerate it): {missing}"
    for ep in routes:
        section = text.split(f"### {ep.method} `{ep.path}`\n", 1)[1].split("\n### ", 1)[0]
        for name in ep.args:
            assert f"| `{name}`" in section, f"{ep.method} {ep.path}: argument {name} is not documented"


def test_api_md_is_up_to_date():
    written = subprocess.run([sys.executable, "-m", "meshnode.faces.web.apidoc"], capture_output=True, text=True,
                             check=True).stdout
    assert written == apidoc.render(all_endpoints())
    assert API_MD.read_text(encoding="utf-8") == written, \
        "protocols/api.md is out of date: python -m meshnode.faces.web.apidoc > protocols/api.md"


def test_the_file_names_what_is_left_to_the_cli():
    text = API_MD.read_text(encoding="utf-8")
    assert "## Left to the command line in v1" in text
    for command, _ in apidoc.CLI_ONLY:
        assert f"`{command}`" in text
