"""Spawn: a parent node creates, starts and looks after child nodes (issue 17, protocols/spawn.md).

A child is an ordinary node with its own fresh key, its own home beside the parent's, a config
derived from the parent's effective one, ``bootstrap.txt`` naming the parent, and a store seeded by
its kind (clone, trained, newborn). Modules, one concern each:

- ``model``: the request, the result, the settings and the default name (the error codes:
  ``meshnode.base.errors.SpawnError``);
- ``ports``: free TCP ports, checked by binding; ``child_config``: the child's config and bootstrap;
- ``parent``: the parent's side, running (inside the node) or stopped (its own database);
- ``service``: ``spawn_child``, the steps in order, each undone if a later one fails;
- ``kinds``/``seed``: what each kind gets (the rows tying parent and child: ``meshnode.records.family``);
- ``autostart``/``launch``: units, scripts, starting and stopping a child process;
- ``invitation``/``hello``/``bundle``: a child on another host.
"""
