"""The fault catalogue: one case per hostile or broken environment.

Each case builds its environment and says what the ``attn`` command must do
there; :func:`conftest.check_case` then runs every command and lookup the
catalogue requires (see ``tests/faults/conftest.py``), in every discovery mode.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from harness import MODES, Env, Expect, check_case, cli, set_mode, validate

from hostile import SELF_HIDING

GROUP = "attn.backends"
INSTALLED = importlib.metadata.version("attn")
MLA = "attn.mla_prefill_backends"
BACKEND = "from attn import AttentionBackend\n\n\nclass Backend(AttentionBackend):\n    pass\n"

Case = Callable[[Env], Expect]
CASES: dict[str, tuple[str, Case]] = {}


def case(family: str) -> Callable[[Case], Case]:
    def register(build: Case) -> Case:
        CASES[build.__name__] = (family, build)
        return build

    return register


def plugin(env: Env, eps: dict[str, str], *, dist: str = "hostile", source: str = BACKEND, **kw):
    """A plugin distribution *dist* whose module ``hostile_mod`` is *source*."""
    env.site.module(f"{dist.replace('-', '_')}_mod", source)
    return env.site.dist(dist, entry_points={GROUP: eps}, **kw)


def code_at_import(env: Env, code: str, name: str = "FLASH_ATTN") -> None:
    plugin(env, {name: "hostile_mod:Backend"}, source=code + "\n" + BACKEND)


LOAD_FAILURE = {"doctor": 0, "doctor_load": 1}
#: attn list names a claimant whose metadata nobody can read.
UNREADABLE = ("the distribution's metadata cannot be read",)
#: The merge warns about a rejected claimant.
REJECTED = frozenset({"RejectedPluginWarning"})


# -- plugin code at import ---------------------------------------------------------


@case("plugin code at import")
def raises_runtime_error(env):
    code_at_import(env, "raise RuntimeError('no GPU here')")
    return Expect(**LOAD_FAILURE, culprit=("hostile 1.0", "RuntimeError: no GPU here"))


@case("plugin code at import")
def raises_import_error(env):
    code_at_import(env, "raise ImportError('libcuda.so.1: cannot open')")
    return Expect(**LOAD_FAILURE, culprit=("hostile 1.0", "libcuda.so.1"))


@case("plugin code at import")
def exits_zero(env):
    code_at_import(env, "raise SystemExit(0)")
    return Expect(**LOAD_FAILURE, culprit=("hostile 1.0", "tried to exit the process"))


@case("plugin code at import")
def exits_three(env):
    code_at_import(env, "import sys\nsys.exit(3)")
    return Expect(**LOAD_FAILURE, culprit=("hostile 1.0", "exit code 3"))


@case("plugin code at import")
def exits_with_message(env):
    code_at_import(env, "import sys\nsys.exit('cannot run here')")
    return Expect(**LOAD_FAILURE, culprit=("hostile 1.0", "'cannot run here'"))


@case("plugin code at import")
def own_base_exception(env):
    code_at_import(env, "class Abort(BaseException):\n    pass\n\n\nraise Abort('stop')")
    return Expect(**LOAD_FAILURE, culprit=("hostile 1.0", "Abort: stop"))


@case("plugin code at import")
def exception_whose_str_raises(env):
    code_at_import(
        env,
        "class Mute(Exception):\n    def __str__(self):\n        raise ValueError\n\n\nraise Mute",
    )
    return Expect(**LOAD_FAILURE, culprit=("hostile 1.0", "its message cannot be shown"))


@case("plugin code at import")
def os_exit(env):
    code_at_import(env, "import os\nos._exit(7)")
    # os._exit ends the process at once: attn cannot report it, only never
    # import it unasked (listing and plain doctor run no plugin code).
    return Expect(doctor=0, doctor_load=7, strict=0, strict_load=7, subprocess=True, load_exit=7)


@case("plugin code at import")
def sleeps(env):
    code_at_import(env, "import time\ntime.sleep(0.2)")
    return Expect(doctor=0)


@case("plugin code at import")
def prints(env):
    code_at_import(env, "print('hello from the plugin')\nimport sys\nsys.stdout.write('{')")
    return Expect(doctor=0)


@case("plugin code at import")
def writes_to_file_descriptor_1(env):
    code_at_import(env, "import os\nos.write(1, b'{not json from the plugin')")
    # Below sys.stdout: the real command's --json output must stay JSON.
    return Expect(doctor=0, subprocess=True)


@case("plugin code at import")
def looks_up_at_import(env):
    code_at_import(env, "import attn\nattn.AttentionBackendEnum['TRITON_ATTN'].get_class()")
    return Expect(doctor=0)


@case("plugin code at import")
def looks_itself_up_at_import(env):
    code_at_import(env, "import attn\nattn.AttentionBackendEnum['FLASH_ATTN'].get_class()")
    return Expect(**LOAD_FAILURE, culprit=("hostile 1.0", "circular import"))


@case("plugin code at import")
def circular_import(env):
    env.site.module("hostile_mod", "from hostile_mod import Backend\n" + BACKEND)
    env.site.dist("hostile", entry_points={GROUP: {"FLASH_ATTN": "hostile_mod:Backend"}})
    return Expect(**LOAD_FAILURE, culprit=("hostile 1.0", "circular import"))


@case("plugin code at import")
def registers_another_name_at_import(env):
    code_at_import(
        env,
        "import attn\nattn.register_backend(attn.AttentionBackendEnum.TORCH_SDPA, "
        "'hostile_mod:Backend')",
        name="HOSTILE",
    )
    return Expect(
        **LOAD_FAILURE, culprit=("hostile 1.0", "TORCH_SDPA", "does not declare"), strict_load=0
    )


# -- entry-point objects of the wrong kind ------------------------------------------

OBJECTS = (
    BACKEND
    + """
not_a_class = 3


def a_function():
    pass
"""
    + SELF_HIDING
    + """

class NotABackend:
    pass


class RequiresRaises(AttentionBackend):
    class requires:  # noqa: N801
        def __iter__(self):
            raise RuntimeError("requires")


class BadRequires(AttentionBackend):
    @classmethod
    def missing_requirements(cls):
        raise RuntimeError("cannot tell")


from attn import MLAPrefillBackend


class Prefill(MLAPrefillBackend):
    pass


loud = Loud()
liar = Liar()
Nameless = Meta("Nameless", (), {})
RequiresRaises.requires = property(lambda self: 1 / 0)
"""
)


def wrong_object(env: Env, attr: str) -> None:
    plugin(env, {"FLASH_ATTN": f"hostile_mod:{attr}"}, source=OBJECTS)


@case("entry-point objects")
def object_is_an_int(env):
    wrong_object(env, "not_a_class")
    return Expect(**LOAD_FAILURE, culprit=("is not a class but int 3",))


@case("entry-point objects")
def object_is_a_function(env):
    wrong_object(env, "a_function")
    return Expect(**LOAD_FAILURE, culprit=("is not a class but function",))


@case("entry-point objects")
def object_repr_raises(env):
    wrong_object(env, "loud")
    return Expect(**LOAD_FAILURE, culprit=("its repr() raises",))


@case("entry-point objects")
def object_class_raises(env):
    wrong_object(env, "liar")
    return Expect(**LOAD_FAILURE, culprit=("RuntimeError: class",))


@case("entry-point objects")
def class_qualname_raises(env):
    wrong_object(env, "Nameless")
    return Expect(**LOAD_FAILURE, culprit=("does not derive from",))


@case("entry-point objects")
def class_not_a_backend(env):
    wrong_object(env, "NotABackend")
    return Expect(**LOAD_FAILURE, culprit=("NotABackend does not derive from",))


@case("entry-point objects")
def class_of_the_other_registry(env):
    wrong_object(env, "Prefill")
    return Expect(**LOAD_FAILURE, culprit=("Prefill does not derive from",))


@case("entry-point objects")
def class_requires_raises(env):
    wrong_object(env, "RequiresRaises")
    return Expect(**LOAD_FAILURE, culprit=("its 'requires' raised",))


@case("entry-point objects")
def class_missing_requirements_raises(env):
    wrong_object(env, "BadRequires")
    return Expect(**LOAD_FAILURE, culprit=("missing_requirements() raised",))


@case("entry-point objects")
def attribute_missing(env):
    wrong_object(env, "Gone")
    return Expect(**LOAD_FAILURE, culprit=("has no attribute 'Gone'",))


# -- names --------------------------------------------------------------------------


def named(env: Env, raw: str) -> None:
    env.site.module("hostile_mod", BACKEND)
    env.site.dist("hostile", raw_entry_points=f"[{GROUP}]\n{raw}\n")


@case("names")
def name_empty(env):
    named(env, " = hostile_mod:Backend")
    return Expect(
        culprit=("hostile 1.0", "entry point '' = 'hostile_mod:Backend' is invalid"),
        listed=("hostile",),
        warns=REJECTED,
    )


@case("names")
def name_with_whitespace(env):
    named(env, "MY ATTN = hostile_mod:Backend")
    return Expect(
        culprit=("entry point 'MY ATTN' = 'hostile_mod:Backend' is invalid",),
        listed=("MY ATTN",),
        warns=REJECTED,
    )


@case("names")
def name_unicode_identifier(env):
    named(env, "ÄTTN_ÜBER = hostile_mod:Backend")
    return Expect(doctor=0, show=("ÄTTN_ÜBER", 0), listed=("ÄTTN_ÜBER",))


@case("names")
def name_unicode_not_identifier(env):
    named(env, "注意-力 = hostile_mod:Backend")
    return Expect(culprit=("'注意-力' = 'hostile_mod:Backend' is invalid",), warns=REJECTED)


@case("names")
def name_very_long(env):
    long = "A" * 10_000
    named(env, f"{long} = hostile_mod:Backend")

    return Expect(doctor=0, show=(long, 0))


@case("names")
def name_declared_twice(env):
    named(env, "FLASH_ATTN = hostile_mod:Backend\nFLASH_ATTN = hostile_mod:Other")
    return Expect(culprit=("declares 'FLASH_ATTN' 2 times",), warns=frozenset({"ConflictWarning"}))


@case("names")
def name_case_variant(env):
    named(env, "flash_attn = hostile_mod:Backend")
    return Expect(doctor=0, culprit=("differs from the built-in 'FLASH_ATTN' only by case",))


@case("names")
def name_with_dots(env):
    named(env, "my.attn = hostile_mod:Backend")
    return Expect(culprit=("'my.attn' = 'hostile_mod:Backend' is invalid",), warns=REJECTED)


@case("names")
def name_with_dashes(env):
    named(env, "my-attn = hostile_mod:Backend")
    return Expect(culprit=("'my-attn' = 'hostile_mod:Backend' is invalid",), warns=REJECTED)


# -- values -------------------------------------------------------------------------


@case("values")
def value_with_extras(env):
    named(env, "HOSTILE = hostile_mod:Backend [cuda]")
    return Expect(doctor=0, show=("HOSTILE", 0))


@case("values")
def value_bad_syntax(env):
    named(env, "FLASH_ATTN = hostile mod::Backend")
    return Expect(culprit=("'hostile mod::Backend' is invalid",), warns=REJECTED)


@case("values")
def value_without_attribute(env):
    named(env, "FLASH_ATTN = hostile_mod")
    return Expect(culprit=("no attribute part",), warns=REJECTED)


@case("values")
def value_missing_module(env):
    named(env, "FLASH_ATTN = hostile_gone:Backend")
    return Expect(**LOAD_FAILURE, culprit=("No module named 'hostile_gone'",))


@case("values")
def value_missing_third_party_dependency(env):
    code_at_import(env, "import cuda_toolkit_that_is_absent")
    return Expect(
        **LOAD_FAILURE, culprit=("missing dependency 'cuda_toolkit_that_is_absent' of hostile",)
    )


# -- METADATA and PKG-INFO -------------------------------------------------------------


def with_metadata(env: Env, text: str | bytes, name: str = "FLASH_ATTN") -> Path:
    env.site.module("hostile_mod", BACKEND)
    info = env.site.dist("hostile", entry_points={GROUP: {name: "hostile_mod:Backend"}})
    data = text if isinstance(text, bytes) else text.encode()
    (info / "METADATA").write_bytes(data)
    return info


@case("metadata")
def metadata_empty(env):
    with_metadata(env, "")
    return Expect(
        culprit=("hostile", "METADATA"),
        listed=("the distribution's metadata cannot be read",),
        warns=REJECTED,
    )


@case("metadata")
def metadata_not_utf8(env):
    with_metadata(
        env,
        b"Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\nSummary: caf\xe9\n"
        b"Requires-Dist: attn>=0.1\n",
    )
    # Python's reader cannot read it either: listed as invalid, with the byte.
    return Expect(
        culprit=("METADATA is not UTF-8 text (byte 0xe9",), listed=UNREADABLE, warns=REJECTED
    )


@case("metadata")
def metadata_without_name(env):
    with_metadata(env, "Metadata-Version: 2.1\nVersion: 1.0\nRequires-Dist: attn>=0.1\n")
    return Expect(
        culprit=("no Name field",),
        listed=("the distribution's metadata cannot be read",),
        warns=REJECTED,
    )


@case("metadata")
def metadata_without_version(env):
    with_metadata(env, "Metadata-Version: 2.1\nName: hostile\nRequires-Dist: attn>=0.1\n")
    return Expect(doctor=0)


@case("metadata")
def metadata_malformed_requirement(env):
    with_metadata(
        env, "Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\nRequires-Dist: attn>=>1\n"
    )
    return Expect(culprit=("invalid requirement 'attn>=>1'",), warns=REJECTED)


@case("metadata")
def metadata_requirement_with_extra(env):
    with_metadata(
        env, "Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\nRequires-Dist: attn[cli]>=0.1\n"
    )
    return Expect(doctor=0, show=("FLASH_ATTN", 0))


@case("metadata")
def metadata_marker_false(env):
    with_metadata(
        env,
        "Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n"
        "Requires-Dist: attn>=99; python_version < '3'\n",
    )
    return Expect(doctor=0)


@case("metadata")
def metadata_url_requirement(env):
    with_metadata(
        env,
        "Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n"
        "Requires-Dist: attn @ https://example.invalid/attn.whl\n",
    )
    return Expect(doctor=0)


@case("metadata")
def metadata_incompatible(env):
    with_metadata(
        env, "Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\nRequires-Dist: attn>=99\n"
    )
    return Expect(
        culprit=("requires attn>=99",),
        listed=("incompatible",),
        warns=REJECTED,
    )


@case("metadata")
def metadata_unreadable_file(env):
    info = with_metadata(env, "Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n")
    (info / "METADATA").unlink()
    (info / "METADATA").mkdir()
    return Expect(
        culprit=("hostile", "METADATA"),
        listed=("the distribution's metadata cannot be read",),
        warns=REJECTED,
    )


@case("metadata")
def pkg_info_only_egg_info(env):
    env.site.module("hostile_mod", BACKEND)
    info = env.site.root / "hostile.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 1.2\nName: hostile\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nFLASH_ATTN = hostile_mod:Backend\n")
    (info / "requires.txt").write_text("attn>=99\n")
    return Expect(culprit=("requires attn>=99",), warns=REJECTED)


@case("metadata")
def egg_info_compatible(env):
    env.site.module("hostile_mod", BACKEND)
    info = env.site.root / "hostile.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 1.2\nName: hostile\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{GROUP}]\nFLASH_ATTN = hostile_mod:Backend\n")
    (info / "requires.txt").write_text("attn>=0.1\n\n[cuda]\nflash-attn\n")
    return Expect(doctor=0, show=("FLASH_ATTN", 0))


# -- entry_points.txt -------------------------------------------------------------------


def with_entry_points(env: Env, data: bytes) -> Path:
    env.site.module("hostile_mod", BACKEND)
    info = env.site.dist("hostile", entry_points={GROUP: {"X": "y:Z"}})
    (info / "entry_points.txt").write_bytes(data)
    return info


@case("entry_points.txt")
def entry_points_binary(env):
    with_entry_points(env, bytes(range(256)) * 4)
    return Expect(
        culprit=("hostile", "entry_points.txt"),
        listed=("attn doctor",),
        warns=REJECTED,
    )


@case("entry_points.txt")
def entry_points_ten_megabytes(env):
    filler = b"# padding\n" * 1_000_000
    with_entry_points(env, filler + f"[{GROUP}]\nHOSTILE = hostile_mod:Backend\n".encode())
    return Expect(doctor=0, show=("HOSTILE", 0))


@case("entry_points.txt")
def entry_points_bom(env):
    with_entry_points(env, f"\ufeff[{GROUP}]\nFLASH_ATTN = hostile_mod:Backend\n".encode())
    # Python's own reader sees no entry point in it: attn says so rather than differ.
    return Expect(
        culprit=("byte-order mark",),
        listed=("attn doctor",),
        warns=REJECTED,
    )


@case("entry_points.txt")
def entry_points_crlf(env):
    with_entry_points(env, f"[{GROUP}]\r\nFLASH_ATTN = hostile_mod:Backend\r\n".encode())
    return Expect(doctor=0, listed=("hostile",))


@case("entry_points.txt")
def entry_points_duplicate_sections(env):
    with_entry_points(
        env,
        (
            f"[{GROUP}]\nA_ATTN = hostile_mod:Backend\n[{GROUP}]\nB_ATTN = hostile_mod:Backend\n"
        ).encode(),
    )
    return Expect(doctor=0, show=("B_ATTN", 0))


@case("entry_points.txt")
def entry_points_empty_section(env):
    with_entry_points(env, f"[{GROUP}]\n\n[{MLA}]\n".encode())
    return Expect(doctor=0)


@case("entry_points.txt")
def entry_points_without_header(env):
    with_entry_points(env, b"FLASH_ATTN = hostile_mod:Backend\n")
    return Expect(
        culprit=("hostile", "entry_points.txt"),
        listed=("attn doctor",),
        warns=REJECTED,
    )


@case("entry_points.txt")
def entry_points_is_a_folder(env):
    info = with_entry_points(env, b"")
    (info / "entry_points.txt").unlink()
    (info / "entry_points.txt").mkdir()
    return Expect(
        culprit=("hostile", "entry_points.txt"),
        listed=("attn doctor",),
        warns=REJECTED,
    )


# -- sys.path ------------------------------------------------------------------------------


def path_entry(env: Env, entry: str) -> None:
    env.monkeypatch.syspath_prepend(entry)


@case("sys.path")
def path_missing_entry(env):
    path_entry(env, str(env.tmp / "does-not-exist"))
    return Expect(doctor=0)


@case("sys.path")
def path_file_entry(env):
    (env.tmp / "plain.txt").write_text("not a folder")
    path_entry(env, str(env.tmp / "plain.txt"))
    return Expect(doctor=0)


def zipped(env: Env, suffix: str) -> None:
    archive = env.tmp / f"hostile-1.0{suffix}"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("hostile_zmod.py", BACKEND)
        z.writestr(
            "hostile-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\nRequires-Dist: attn>=0.1\n",
        )
        z.writestr(
            "hostile-1.0.dist-info/entry_points.txt", f"[{GROUP}]\nZIPPED = hostile_zmod:Backend\n"
        )
    path_entry(env, str(archive))


@case("sys.path")
def path_zip_file(env):
    zipped(env, ".zip")
    return Expect(doctor=0, show=("ZIPPED", 0), listed=("ZIPPED",))


@case("sys.path")
def path_egg_file_incompatible(env):
    archive = env.tmp / "hostile-1.0-py3.egg"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("hostile_zmod.py", BACKEND)
        z.writestr("EGG-INFO/PKG-INFO", "Metadata-Version: 1.2\nName: hostile\nVersion: 1.0\n")
        z.writestr("EGG-INFO/requires.txt", "attn>=99\n")
        z.writestr("EGG-INFO/entry_points.txt", f"[{GROUP}]\nFLASH_ATTN = hostile_zmod:Backend\n")
    path_entry(env, str(archive))
    return Expect(culprit=("requires attn>=99",), warns=REJECTED)


@case("sys.path")
def path_symlink_loop(env):
    loop = env.tmp / "loop"
    loop.mkdir()
    (loop / "again").symlink_to(loop)
    (loop / "self").symlink_to(loop / "self")
    path_entry(env, str(loop))
    path_entry(env, str(loop / "self"))
    return Expect(doctor=0)


@case("sys.path")
def path_ten_thousand_files(env):
    crowd = env.tmp / "crowd"
    crowd.mkdir()
    for i in range(10_000):
        (crowd / f"module_{i}.py").touch()
    path_entry(env, str(crowd))
    return Expect(doctor=0)


@case("sys.path")
def path_empty_and_relative_entries(env):
    plugin(env, {"HOSTILE": "hostile_mod:Backend"})
    env.monkeypatch.chdir(env.site.root)
    env.monkeypatch.setattr(
        sys, "path", ["", ".", *[p for p in sys.path if p != str(env.site.root)]]
    )
    # '' and '.' are one folder: its distributions count once.
    return Expect(doctor=0, show=("HOSTILE", 0))


class RaisingFinder:
    def find_spec(self, *_args, **_kwargs):
        return None

    def find_distributions(self, *_args, **_kwargs):
        raise RuntimeError("the finder is broken")


@case("sys.path")
def path_raising_finder(env):
    plugin(env, {"FLASH_ATTN": "hostile_mod:Backend"})
    env.monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, RaisingFinder()])
    return Expect(
        doctor=1,
        culprit=("RaisingFinder", "the finder is broken"),
        show=("FLASH_ATTN", 0),
        strict=1,
        listed=("attn doctor",),
        warns=REJECTED,
    )


# -- copies ------------------------------------------------------------------------------


@case("copies")
def two_versions(env):
    first, second = env.sites.new("a"), env.sites.new("b")
    env.extra["site"] = first
    first.module("hostile_mod", BACKEND)
    first.dist("hostile", "2.0", entry_points={GROUP: {"FLASH_ATTN": "hostile_mod:Backend"}})
    second.dist("hostile", "1.0", entry_points={GROUP: {"FLASH_ATTN": "hostile_mod:Backend"}})
    return Expect(culprit=("hostile is installed twice",))


@case("copies")
def egg_info_beside_dist_info(env):
    plugin(env, {"FLASH_ATTN": "hostile_mod:Backend"})
    info = env.site.root / "hostile.egg-info"
    info.mkdir()
    (info / "PKG-INFO").write_text("Metadata-Version: 1.2\nName: hostile\nVersion: 0.9\n")
    return Expect(culprit=("hostile is installed twice",))


@case("copies")
def empty_dist_info_first(env):
    first, second = env.sites.new("a"), env.sites.new("b")
    env.extra["site"] = second
    (first.root / "hostile-1.0.dist-info").mkdir()
    second.module("hostile_mod", BACKEND)
    second.dist("hostile", entry_points={GROUP: {"FLASH_ATTN": "hostile_mod:Backend"}})
    return Expect(culprit=("cannot be used",), show=("FLASH_ATTN", 0))


@case("copies")
def empty_attn_dist_info(env):
    (env.site.root / "attn-9.9.dist-info").mkdir()
    env.extra["version_check"] = True
    return Expect(culprit=("cannot be used",))


@case("copies")
def setuptools_editable_src_layout(env):
    project = env.tmp / "project"
    (project / "src" / "hostile_mod").mkdir(parents=True)
    (project / "src" / "hostile_mod" / "__init__.py").write_text(BACKEND)
    egg = project / "src" / "hostile.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n")
    (egg / "requires.txt").write_text("attn>=0.1\n")
    (egg / "entry_points.txt").write_text(f"[{GROUP}]\nFLASH_ATTN = hostile_mod:Backend\n")
    info = env.site.dist("hostile", entry_points={GROUP: {"FLASH_ATTN": "hostile_mod:Backend"}})
    # What pip writes for `pip install -e` (PEP 610).
    (info / "direct_url.json").write_text(
        json.dumps({"url": project.as_uri(), "dir_info": {"editable": True}})
    )
    (env.site.root / "__editable__.hostile-1.0.pth").write_text(str(project / "src") + "\n")
    path_entry(env, str(project / "src"))
    sys.path.remove(str(project / "src"))
    sys.path.insert(1, str(project / "src"))
    return Expect(doctor=0, show=("FLASH_ATTN", 0))


@case("copies")
def hatchling_editable(env):
    project = env.tmp / "project"
    (project / "hostile_mod").mkdir(parents=True)
    (project / "hostile_mod" / "__init__.py").write_text(BACKEND)
    env.site.dist("hostile", entry_points={GROUP: {"FLASH_ATTN": "hostile_mod:Backend"}})
    (env.site.root / "_hostile.pth").write_text(str(project) + "\n")
    path_entry(env, str(project))
    return Expect(doctor=0, show=("FLASH_ATTN", 0))


# -- a backend's validate_configuration (attn select) -----------------------------------

#: Select the plugin's FLASH_ATTN alone, with one setting, as JSON.
SELECT = ("select", "attn.backends", "--backend", "FLASH_ATTN", "--set", "head_size=7", "--json")


def validating(env: Env, body: str) -> None:
    """A plugin whose FLASH_ATTN class checks its settings with *body*."""
    lines = "".join(f"        {line}\n" for line in body.splitlines())
    source = (
        "import sys\nfrom attn import AttentionBackend\n\n\nclass Backend(AttentionBackend):\n"
        f"    @classmethod\n    def validate_configuration(cls, **settings):\n{lines}"
    )
    plugin(env, {"FLASH_ATTN": "hostile_mod:Backend"}, source=source)


MUTE = "class Mute(Exception):\n    def __str__(self):\n        raise SystemExit\nraise Mute"
#: Each case: its check's body, ``attn select``'s exit code and what it says ("|" between).
VALIDATIONS = {
    "raises": ("raise RuntimeError('no kernel')", 1, "its check raised RuntimeError: no kernel"),
    "exits": ("sys.exit(3)", 1, "validation-failed|tried to exit the process (exit code 3)"),
    "raises_its_own_base_exception": (
        "class Abort(BaseException):\n    pass\nraise Abort('stop')",
        1,
        "validation-failed|Abort: stop",
    ),
    "error_whose_str_raises": (MUTE, 1, "validation-failed|its message cannot be shown"),
    "sleeps": ("import time\ntime.sleep(0.2)\nreturn []", 0, '"verdict": "chosen"|hostile_mod'),
    "returns_no_list": ("return 'odd'", 1, "a list of str; 'odd' is a <class 'str'>"),
    "returns_no_strings": ("return [7, None]", 1, "a list of str; 7 is a <class 'int'>"),
    "prints": (
        "print('checking')\nsys.stdout.write('{')\nreturn ['head_size 7 is odd']",
        1,
        "invalid-configuration|head_size 7 is odd",
    ),
}


def named_case(family: str, name: str, build: Case) -> None:
    """Register *build*, made by a function from a table's row, as the case *name*."""
    build.__name__ = name
    case(family)(build)


def _validation_case(name: str, body: str, code: int, said: str) -> None:
    def build(env: Env) -> Expect:
        validating(env, body)
        verdict = '"verdict": "rejected"|' if code else ""
        return Expect(doctor=0, commands=((SELECT, code, tuple((verdict + said).split("|"))),))

    named_case("validate_configuration", f"validation_{name}", build)


for _name, _check in VALIDATIONS.items():
    _validation_case(_name, *_check)


# -- --registry MODULE:CLASS naming another host's registry --------------------------------

HOST_REGISTRY = """\
from attn.registry import Backend, BackendEnum


class Sampler(Backend):
    pass


class Greedy(Sampler):
    pass


class Registry(BackendEnum, group="hostile.samplers", host="hostile-host", noun="sampler",
               interface=Sampler):
    GREEDY = "hostile_host:Greedy"
"""


OPTION = ("--registry", "hostile_host:Registry")
#: Every command that takes ``--registry``, naming the case's host module.
REGISTRY_COMMANDS = (
    ("list", *OPTION),
    ("list", "--json", *OPTION),
    ("show", "GREEDY", *OPTION),
    ("doctor", *OPTION),
    ("select", *OPTION),
    ("state", "save", "-", *OPTION),
)
IMPORT_ERROR = "cannot import registry 'hostile_host:Registry': "
#: Each case: the host module's source, and the error every command above prints (exit 2).
REFUSED = {
    "module_raises": (
        "raise RuntimeError('needs a GPU')",
        IMPORT_ERROR + "RuntimeError: needs a GPU",
    ),
    "module_exits": (
        "import sys\nsys.exit(5)",
        IMPORT_ERROR + "SystemExit: its code tried to exit the process (exit code 5)",
    ),
    "module_error_whose_str_raises": (MUTE, IMPORT_ERROR + "Mute (its message cannot be shown"),
    "module_lacks_the_class": (
        "Sampler = None\n",
        IMPORT_ERROR + "AttributeError: module 'hostile_host' has no attribute 'Registry'",
    ),
    "is_not_a_registry": (
        "Registry = 3\n",
        "invalid registry 'hostile_host:Registry': it is 3, not a BackendEnum with a group",
    ),
}


def _refused_case(name: str, source: str, error: str) -> None:
    def build(env: Env) -> Expect:
        env.site.module("hostile_host", source)
        said = (f"Error: {error}",)
        return Expect(doctor=0, commands=tuple((args, 2, said) for args in REGISTRY_COMMANDS))

    named_case("--registry", f"registry_{name}", build)


for _name, (_source, _error) in REFUSED.items():
    _refused_case(_name, _source, _error)


@case("--registry")
def registry_interface_path_fails_to_import(env):
    source = HOST_REGISTRY.replace("interface=Sampler", "interface='hostile_iface:Sampler'")
    env.site.module("hostile_host", source)
    env.site.module("hostile_iface", "raise RuntimeError('needs a GPU')\n")
    why = "interface 'hostile_iface:Sampler' cannot be imported: RuntimeError: needs a GPU"
    return Expect(
        doctor=0,
        commands=(
            (("list", *OPTION), 0, ("GREEDY",)),
            (("list", "--load", *OPTION), 0, ("broken", why)),
            (("show", "GREEDY", "--load", *OPTION), 0, ("broken", why)),
            (("doctor", "--load", *OPTION), 1, (why, "fix the interface= of Registry")),
            (("select", *OPTION), 1, (why,)),
        ),
    )


@case("--registry")
def registry_module_sleeps_and_prints_and_its_plugin_breaks(env):
    source = "import time\ntime.sleep(0.1)\nprint('{loading the host')\n" + HOST_REGISTRY
    env.site.module("hostile_host", source)
    env.site.module("hostile_sampler", "raise RuntimeError('no GPU here')\n")
    eps = {"hostile.samplers": {"GREEDY": "hostile_sampler:Fast"}}
    env.site.dist("hostile-host", requires=())
    env.site.dist("hostile-sampler", entry_points=eps, requires=("hostile-host>=1.0",))
    culprit = "hostile-sampler 1.0 provides 'GREEDY'"
    return Expect(
        doctor=0,
        commands=(
            (("list", *OPTION), 0, ("GREEDY", "hostile-sampler")),
            (("list", "--json", *OPTION), 0, ("loading the host",)),
            (("list", "--load", "--json", *OPTION), 0, ()),
            (("doctor", *OPTION), 0, ()),
            (("doctor", "--load", *OPTION), 1, (culprit, "RuntimeError: no GPU here")),
            (("select", "--json", *OPTION), 0, ("load-failure", "no GPU here", '"fallback": true')),
        ),
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", list(CASES))
def test_case(name, mode, sites, tmp_path, monkeypatch):
    """Every command keeps working, exits as documented and names the culprit with a fix."""
    set_mode(mode, tmp_path, monkeypatch)
    _, build = CASES[name]
    env = Env(sites=sites, tmp=tmp_path, monkeypatch=monkeypatch)
    expect = build(env)
    check_case(expect, mode, monkeypatch)
    if env.extra.get("version_check"):
        version = cli("--version")
        assert "None" not in version.out
        assert version.out.startswith(f"attn {INSTALLED} ")
        assert validate(cli("list", "--json").out)["attn_version"] == INSTALLED


def test_catalogue_size():
    """The catalogue covers at least 60 environments."""
    assert len(CASES) >= 60
    assert os.environ.get("ATTN_STRICT") is None
