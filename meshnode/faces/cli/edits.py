"""CLI commands that change or withdraw knowledge and notes: ``concept update|delete``,
``link update|delete``, ``diary delete``, ``note update|delete``.

Containers are immutable: an update is a new version, a delete of knowledge is a
signed retraction that friends' nodes follow, a delete of a note hides it on this
node (``meshnode/records/knowledge_edits.py``). The application's ``edit`` action, by the running
node when there is one, on the home's database otherwise.
"""

from __future__ import annotations

from meshnode.records import knowledge_edits
from meshnode.faces.cli.common import _config, act, container_did, resolve_references, terminal_safe


_NOUNS = {"diary": "diary entry", "concept": "concept", "link": "link", "note": "note"}


def cmd_edit(args) -> int:
    config = _config(args)
    kind = args.op.split("_")[0]
    args.id = container_did(config, args.id, _NOUNS[kind])
    resolve_references(config, args, (("target", "--target", "semantic_node"),))
    fields = {k: v for k, v in (("label", getattr(args, "label", None)),
                                ("description", getattr(args, "description", None)),
                                ("aliases", getattr(args, "alias", None)), ("tags", getattr(args, "tag", None)),
                                ("relation", getattr(args, "relation", None)),
                                ("targets", getattr(args, "target", None)), ("inverse", getattr(args, "inverse", None)),
                                ("text", getattr(args, "text", None))) if v is not None}
    if getattr(args, "restore", False):
        fields["restore"] = True
    if args.op.endswith("_update") and args.op != "note_update" and not fields:
        raise knowledge_edits.EditError("nothing_to_change", "give at least one thing to change (see --help)")
    result = act(config, "edit", {"op": args.op, "id": args.id, **fields})
    if args.op == "note_delete":
        print(terminal_safe(f"{'shown again' if fields.get('restore') else 'hidden'}: {result['did']}"))
    elif "retracted" in result:
        print(terminal_safe(f"retracted {result['retracted']} with {result['did']}"))
    else:
        print(terminal_safe(result["did"]))
    return 0
