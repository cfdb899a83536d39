"""Import hook that makes the mounted skills importable as skills.<name>.

Only the mounted skills and the packages on the way to them exist under
`skills`: `skills.acme` is an empty package when acme.math.add is mounted,
`skills.acme.math.add` is the skill itself (its folder is the package's
path, so `code/main.py` is `skills.acme.math.add.code.main` and relative
imports work), and the skill's export is re-exported by the package. A
mounted skill that is also a prefix of another (acme.math and
acme.math.add) is both at once: the nested skill wins over a folder of the
same name inside the outer one.
"""

import importlib
import importlib.abc
import importlib.machinery
import sys

PACKAGE = "skills"


class _Loader(importlib.abc.Loader):
    def __init__(self, skill):
        self.skill = skill

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        skill = self.skill
        if skill is None:
            return
        module.__skill__ = skill["name"]
        entry, export = skill.get("entry"), skill.get("export")
        if not entry or not export:
            return
        mod = importlib.import_module(module.__name__ + "." + entry)
        try:
            value = getattr(mod, export)
        except AttributeError:
            raise AttributeError(
                "skill %s: export %r is not defined in %s"
                % (skill["name"], export, mod.__name__)) from None
        setattr(module, export, value)


class SkillFinder(importlib.abc.MetaPathFinder):
    """Finds `skills` and the packages of the mounted skills."""

    def __init__(self, skills):
        self.skills = {s["name"]: s for s in skills}
        self.packages = set()
        for name in self.skills:
            parts = name.split(".")
            for i in range(1, len(parts) + 1):
                self.packages.add(".".join(parts[:i]))

    def find_spec(self, fullname, path=None, target=None):
        if fullname == PACKAGE:
            return self._spec(fullname, None)
        if not fullname.startswith(PACKAGE + "."):
            return None
        rel = fullname[len(PACKAGE) + 1:]
        if rel not in self.packages:
            # Modules inside a skill's folder are found by the regular path
            # finder through the parent package's __path__; anything else
            # under `skills` has an empty parent path and is not found.
            return None
        return self._spec(fullname, self.skills.get(rel))

    @staticmethod
    def _spec(fullname, skill):
        spec = importlib.machinery.ModuleSpec(fullname, _Loader(skill), is_package=True)
        spec.submodule_search_locations = [skill["root"]] if skill else []
        return spec


def install(skills):
    """Put the finder first on sys.meta_path (replacing an earlier one)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, SkillFinder)]
    sys.meta_path.insert(0, SkillFinder(skills))
    importlib.invalidate_caches()
