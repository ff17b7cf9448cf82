"""Hostile files, as a careless or malicious teammate could push them.

Each is small on disk; read naively, each one hangs a reader or exhausts its memory.
"""

from __future__ import annotations

#: A "billion laughs" YAML document: nine levels of nine aliases, ~600 bytes on disk,
#: 9**9 strings once anything walks it.
ALIAS_BOMB = "\n".join(
    ['lol0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [f"lol{n}: &l{n} [" + ", ".join([f"*l{n - 1}"] * 9) + "]" for n in range(1, 10)]
)


def bomb_item(item_id: str = "01BMB0000000000000000000AA", title: str = "Bomb") -> bytes:
    return f"---\nid: {item_id}\ntitle: {title}\n{ALIAS_BOMB}\n---\nbody\n".encode()


def bomb_synapse() -> bytes:
    return (
        "id: syn-0000000000000000\nfrom: 01A\nto: 01B\nkind: extends\n" + ALIAS_BOMB + "\n"
    ).encode()


def nested_item(depth: int, item_id: str = "01DEEP000000000000000000AA") -> bytes:
    """An item whose ``source`` nests ``depth`` lists deep."""
    return f"---\nid: {item_id}\ntitle: Deep\nsource: {'[' * depth}{']' * depth}\n---\nbody\n".encode()
