"""Tensors of a file ``torch.save`` wrote (a ``.pt``/``.pth`` state dict), read as numpy arrays
without torch, and without running anything the file names.

``torch.save`` pickles the object and writes each tensor's storage next to the pickle: in a zip
archive (``<name>/data.pkl`` and ``<name>/data/<key>``, torch 1.6 and later), or in the legacy stream
(pickles of a magic number, the protocol, the machine's sizes, the object and the storage keys, then
each storage as its element count and bytes; resemblyzer's ``pretrained.pt`` and
efficientnet-lite0's ``.pth`` are of this kind). A pickle may name any importable function, which
unpickling calls, so the unpickler here knows only the names a state dict uses and refuses every
other one before anything is called.
"""

from __future__ import annotations

import collections
import io
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

LEGACY_MAGIC = 0x1950A86A20F9469CFC6C
LEGACY_PROTOCOL = 1001

_STORAGE_DTYPES = {
    "DoubleStorage": np.float64,
    "FloatStorage": np.float32,
    "HalfStorage": np.float16,
    "LongStorage": np.int64,
    "IntStorage": np.int32,
    "ShortStorage": np.int16,
    "CharStorage": np.int8,
    "ByteStorage": np.uint8,
    "BoolStorage": np.bool_,
}


class UnsafeWeightsError(ValueError):
    """The file names something a state dict does not need (code the unpickling would run)."""


@dataclass(frozen=True)
class _StorageType:
    """``torch.FloatStorage`` and kin, as the pickle names them: only their element type is used."""

    name: str
    dtype: np.dtype


@dataclass(frozen=True)
class _Storage:
    key: str
    dtype: np.dtype
    numel: int
    view: tuple[str, int, int] | None = None  # legacy views: (view key, offset, size) in elements


@dataclass(frozen=True)
class _Tensor:
    """A tensor as the pickle describes it; its bytes are read once the pickle is done (the legacy
    format writes them after it)."""

    storage: _Storage
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor_v2(
    storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None, metadata=None
) -> _Tensor:
    if not isinstance(storage, _Storage):
        raise UnsafeWeightsError("a tensor whose storage is not one of the file's storages")
    return _Tensor(
        storage, int(storage_offset), tuple(int(n) for n in size), tuple(int(n) for n in stride)
    )


def _rebuild_parameter(data, requires_grad=False, backward_hooks=None) -> Any:
    return data


_ALLOWED = {
    ("collections", "OrderedDict"): collections.OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    **{
        ("torch", name): _StorageType(name, np.dtype(dtype))
        for name, dtype in _STORAGE_DTYPES.items()
    },
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, file, path: Path, zipped: bool) -> None:
        super().__init__(file)
        self.path, self.zipped = path, zipped

    def find_class(self, module: str, name: str):
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise UnsafeWeightsError(
                f"{self.path}: refused to read it, it names {module}.{name}, which is not part of a state dict "
                f"of tensors (unpickling it would run code); use the weights the package ships, or re-save them "
                f"with torch.save(model.state_dict(), path)"
            ) from None

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            what = pid[0] if isinstance(pid, tuple) and pid else type(pid).__name__
            raise UnsafeWeightsError(
                f"{self.path}: refused to read it, it holds a saved {what!r}, not tensors "
                f"(torch.save of a whole model); save model.state_dict() instead"
            )
        if self.zipped:
            _, storage_type, key, _location, numel = pid
            view = None
        else:
            _, storage_type, key, _location, numel, view = pid
        if not isinstance(storage_type, _StorageType):
            raise UnsafeWeightsError(f"{self.path}: a storage of unknown type {storage_type!r}")
        return _Storage(
            str(key),
            storage_type.dtype,
            int(numel),
            None if view is None else (str(view[0]), int(view[1]), int(view[2])),
        )


def read_torch_file(path: Path) -> Any:
    """What ``torch.save`` saved at ``path`` (dicts, lists, numbers), its tensors as numpy arrays.
    Raises ``UnsafeWeightsError`` where the file names anything else, ``ValueError`` where it is not
    a torch file or is cut short."""
    path = Path(path)
    try:
        if zipfile.is_zipfile(path):
            return _read_zip(path)
        with path.open("rb") as f:
            return _read_legacy(f, path)
    except UnsafeWeightsError as e:
        if str(e).startswith(f"{path}:"):
            raise
        raise UnsafeWeightsError(f"{path}: refused to read it, {e}") from e
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError) as e:
        raise ValueError(
            f"{path}: not a state dict torch.save wrote, or cut short ({type(e).__name__}: {e}); "
            f"reinstall the package that ships it"
        ) from e


def state_dict(path: Path, key: str | None = None) -> dict[str, np.ndarray]:
    """The tensors of the state dict at ``path`` (under ``key`` where the file holds a checkpoint dict)."""
    obj = read_torch_file(path)
    if key is not None:
        if not isinstance(obj, dict) or key not in obj:
            found = (
                ", ".join(map(str, list(obj)[:3])) + ", ..."
                if isinstance(obj, dict)
                else type(obj).__name__
            )
            raise ValueError(
                f"{path}: no {key!r} in it, so not the checkpoint expected (it holds {found})"
            )
        obj = obj[key]
    if not isinstance(obj, dict) or not all(isinstance(v, np.ndarray) for v in obj.values()):
        found = (
            ", ".join(map(str, list(obj)[:3])) + ", ..."
            if isinstance(obj, dict)
            else type(obj).__name__
        )
        raise ValueError(f"{path}: not a state dict of tensors (it holds {found})")
    return dict(obj)


def _read_zip(path: Path) -> Any:
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        pickles = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise ValueError(f"{len(pickles)} data.pkl in the archive")
        root = pickles[0].rsplit("/", 1)[0]
        order = f"{root}/byteorder"
        little = order not in names or archive.read(order).strip() == b"little"
        obj = _Unpickler(io.BytesIO(archive.read(pickles[0])), path, zipped=True).load()
        cache: dict[str, bytes] = {}

        def data(storage: _Storage) -> bytes:
            if storage.key not in cache:
                cache[storage.key] = archive.read(f"{root}/data/{storage.key}")
            return cache[storage.key]

        return _resolve(obj, data, little)


def _read_legacy(f, path: Path) -> Any:
    def load():
        return _Unpickler(f, path, zipped=False).load()

    if load() != LEGACY_MAGIC:
        raise ValueError("not a torch file (no torch.save magic number, and not a zip archive)")
    if load() != LEGACY_PROTOCOL:
        raise ValueError("an unknown legacy torch.save protocol")
    sys_info = load()
    little = bool(sys_info.get("little_endian", True)) if isinstance(sys_info, dict) else True
    obj = load()
    keys = load()
    # storages follow in the order of ``keys``: an int64 element count, then the elements
    found: dict[str, bytes] = {}
    storages = {s.key: s for s in _storages(obj)}
    for key in keys:
        count = int(np.frombuffer(f.read(8), dtype="<i8" if little else ">i8")[0])
        itemsize = storages[key].dtype.itemsize if key in storages else None
        if itemsize is None:
            raise ValueError(
                f"storage {key} is listed but no tensor uses it, so its element size is unknown"
            )
        raw = f.read(count * itemsize)
        if len(raw) != count * itemsize:
            raise ValueError(f"storage {key} is cut short")
        found[key] = raw
    return _resolve(obj, lambda s: found[s.key], little)


def _storages(obj: Any):
    if isinstance(obj, _Tensor):
        yield obj.storage
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _storages(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _storages(v)


def _resolve(obj: Any, data, little: bool) -> Any:
    """``obj`` with each ``_Tensor`` replaced by its array (copied: contiguous and writable)."""
    if isinstance(obj, _Tensor):
        s = obj.storage
        dtype = s.dtype.newbyteorder("<" if little else ">")
        raw = data(s)
        if 0 in obj.shape:
            return np.zeros(obj.shape, dtype.newbyteorder("="))
        base = (s.view[1] if s.view is not None else 0) + obj.offset
        last = base + sum((d - 1) * st for d, st in zip(obj.shape, obj.stride))
        if base < 0 or (last + 1) * dtype.itemsize > len(raw):
            raise ValueError(f"a tensor of shape {obj.shape} reaches past its storage {s.key}")
        view = np.ndarray(
            obj.shape,
            dtype,
            buffer=raw,
            offset=base * dtype.itemsize,
            strides=tuple(n * dtype.itemsize for n in obj.stride),
        )
        return np.array(view, dtype=dtype.newbyteorder("="), order="C")
    if isinstance(obj, collections.OrderedDict):
        return collections.OrderedDict((k, _resolve(v, data, little)) for k, v in obj.items())
    if isinstance(obj, dict):
        return {k: _resolve(v, data, little) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_resolve(v, data, little) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_resolve(v, data, little) for v in obj)
    return obj
