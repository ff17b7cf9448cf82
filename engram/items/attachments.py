"""Images a note embeds (``![[photo.png]]``), found the way Obsidian finds them, read safely.

A person's vault keeps pictures beside the notes (Obsidian's attachment folder,
``.obsidian/app.json`` ``attachmentFolderPath``, or any folder), and a note names one by
file name, by vault-relative path or relative to its own folder. :func:`attachment`
looks in that order: the path as written from the vault's root; relative to the folder
of the note that embeds it; the attachment folder; then any file of that name in the
vault (the one whose path ends with the link, else the shortest path). Hidden folders
(``.git``, ``.engram``, ``.obsidian``) are never looked in.

Invariants: only images are served (:data:`IMAGE_TYPES`, by extension); only regular
files inside the vault, never through a symbolic link (:func:`engram.store.paths.resolve_inside`
and :func:`engram.store.fsio.read_regular`), and at most :data:`MAX_ATTACHMENT_BYTES`. A
name that leaves the vault (``../``, an absolute path) is :class:`~engram.errors.InvalidInput`;
a name that matches nothing is :class:`~engram.errors.NotFound`. Nothing is written.
"""

from __future__ import annotations

import json
import os
import posixpath
import stat
import unicodedata
from dataclasses import dataclass

from engram.errors import EngramError, InvalidInput, NotFound, UnsafeFile
from engram.index.rows import SKIP_DIRS
from engram.items.state import VaultState
from engram.store.fsio import read_regular, too_large
from engram.store.paths import resolve_inside

#: The image types served, by lower-case extension.
IMAGE_TYPES = {
    "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif",
    "webp": "image/webp", "avif": "image/avif", "bmp": "image/bmp", "svg": "image/svg+xml",
    "ico": "image/x-icon",
}
MAX_ATTACHMENT_BYTES = 32 * 1024 * 1024
_MAX_NAME = 1000


@dataclass(frozen=True, slots=True)
class Attachment:
    path: str  # vault-relative
    media_type: str
    data: bytes


def is_image(name: str) -> bool:
    return name.rpartition(".")[2].lower() in IMAGE_TYPES if "." in name else False


def attachment(state: VaultState, name: str, source: str | None = None) -> Attachment:
    """The image ``name`` (as a note writes it: ``photo.png``, ``Attachments/photo.png``,
    ``../img/photo.png``) embedded by the item ``source`` names (any reference), read
    from the vault.

    Raises InvalidInput (not an image, or a name that leaves the vault), NotFound (no
    such image), FormatError (a symlink or special file in its place, or over 32 MB).
    """
    rel = locate(state, name, source)
    try:
        _, data = read_regular(resolve_inside(state.root, rel), rel, MAX_ATTACHMENT_BYTES)
    except FileNotFoundError:  # gone since it was found
        raise NotFound(f"no image {rel!r} in the vault.", ref=rel, hint="It was removed; reload the page.") from None
    return Attachment(rel, IMAGE_TYPES[rel.rpartition(".")[2].lower()], data)


def locate(state: VaultState, name: str, source: str | None = None) -> str:
    """Where the image ``name`` embedded by ``source`` is (vault-relative), without
    reading it: what a page needs to decide between a picture and "missing". Raises as
    :func:`attachment` does."""
    text = unicodedata.normalize("NFC", name.replace("\\", "/").strip())
    if not text or len(text) > _MAX_NAME or "\0" in text:
        raise InvalidInput(f"{name[:80]!r} is not a file name.", field="name", hint="Name an image in the vault.")
    if not is_image(text):
        kinds = ", ".join(sorted(IMAGE_TYPES))
        raise InvalidInput(f"{text!r} is not an image; only images ({kinds}) are shown.", field="name",
                           hint="Open other files from the vault folder.")
    folder = posixpath.dirname(state.resolve(source)) if source is not None else ""
    for rel in _candidates(state, text, folder):  # plain relative paths: no "..", nothing hidden
        try:
            st = os.lstat(state.root / rel)
        except OSError:
            continue
        if not stat.S_ISLNK(st.st_mode):
            try:
                resolve_inside(state.root, rel)
            except InvalidInput:  # a symlinked folder on the way
                continue
        if not stat.S_ISREG(st.st_mode):
            if stat.S_ISDIR(st.st_mode):
                continue
            raise UnsafeFile(rel, "is not a regular file (a symbolic link?); the viewer shows only real files")
        if st.st_size > MAX_ATTACHMENT_BYTES:
            raise too_large(rel, st.st_size, MAX_ATTACHMENT_BYTES)
        return rel
    if posixpath.normpath(posixpath.join(folder, text.lstrip("/"))).startswith(".."):
        raise InvalidInput(f"{text!r} leaves the vault.", field="name", hint="Embed images inside the vault.")
    raise NotFound(f"no image {text!r} in the vault.", ref=text,
                   hint="Put the file in the vault (the attachment folder, or beside the note).")


def _candidates(state: VaultState, text: str, folder: str) -> list[str]:
    """Vault-relative paths to try, in Obsidian's order, each a plain relative path."""
    plain = text.lstrip("/")
    tried = [plain]
    if folder:
        tried.append(posixpath.join(folder, plain))
    base = _attachment_folder(state, folder)
    if base is not None:
        tried.append(posixpath.join(base, plain) if base else plain)
    out: list[str] = []
    for rel in tried:
        rel = posixpath.normpath(rel)
        if rel in out or rel in (".", ""):
            continue
        if any(part.startswith(".") for part in rel.split("/")):  # "..", or a hidden folder
            continue
        out.append(rel)
    return out + [p for p in _by_name(state, plain) if p not in out]


def _attachment_folder(state: VaultState, folder: str) -> str | None:
    """Obsidian's attachment folder (``./`` is the note's own folder), or None."""
    try:
        _, data = read_regular(state.root / ".obsidian" / "app.json", ".obsidian/app.json", 256 * 1024)
        value = json.loads(data).get("attachmentFolderPath")
    except (OSError, EngramError, ValueError, AttributeError):
        return None
    if not isinstance(value, str) or not value.strip() or value.strip() == "/":
        return None
    value = value.strip()
    if value.startswith("./"):
        return posixpath.join(folder, value[2:]) if folder else value[2:]
    return value.strip("/")


def _by_name(state: VaultState, text: str) -> list[str]:
    """Files named like the link's last segment anywhere in the vault (not in hidden
    folders): those whose path ends with the link first, then the shortest paths."""
    want = text.rsplit("/", 1)[-1].casefold()
    found: list[str] = []
    stack = [("", str(state.root))]
    while stack:
        prefix, folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if name.startswith(".") or name in SKIP_DIRS:
                continue
            if entry.is_dir(follow_symlinks=False):
                stack.append((prefix + name + "/", entry.path))
            elif unicodedata.normalize("NFC", name).casefold() == want:
                found.append(prefix + name)
    tail = "/" + text.casefold()
    return sorted(found, key=lambda p: (not ("/" + p.casefold()).endswith(tail), p.count("/"), len(p), p))
