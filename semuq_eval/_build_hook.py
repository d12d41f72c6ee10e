"""Build hook (setuptools commands named in pyproject.toml's ``[tool.setuptools.cmdclass]``): ship ``semuq_eval_lm_eval_plugin.pth`` .

The .pth file's one line arms :mod:`semuq_eval._lm_eval_hook` at start-up, so that a plain ``lm_eval --model semuq-hf
...`` (lm-eval 0.4.x has no plugin discovery) finds the plugin. It must land in site-packages itself, which neither
package data nor ``data_files`` can do, so an extra ``build`` step writes it into ``build_lib`` (the wheel's root) or,
for an editable install (PEP 660), into ``install_lib``, beside setuptools' ``__editable__.*.pth``."""

from pathlib import Path

from setuptools import Command
from setuptools.command.build import build

PTH_NAME = "semuq_eval_lm_eval_plugin.pth"
# site.py runs a .pth line that starts with "import"; this one imports nothing when the switch is off, and
# a failing import (a broken install) stays silent instead of printing a traceback at every start-up.
PTH_LINE = (
    'import os; os.environ.get("SEMUQ_EVAL_LM_EVAL_PLUGIN", "").strip().lower() in ("0", "false", "no", "off")'
    ' or exec("try: import semuq_eval._lm_eval_hook\\nexcept Exception: pass")'
)


class build_lm_eval_hook(Command):
    description = f"write {PTH_NAME} (the lm-eval start-up hook, see semuq_eval/_lm_eval_hook.py)"
    user_options = []

    def initialize_options(self):
        self.build_lib = None
        self.editable_mode = False

    def finalize_options(self):
        self.set_undefined_options("build_py", ("build_lib", "build_lib"))

    def _target(self) -> Path:
        if self.editable_mode:
            return Path(self.get_finalized_command("install").install_lib, PTH_NAME)
        return Path(self.build_lib, PTH_NAME)

    def run(self):
        target = self._target()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(PTH_LINE + "\n", encoding="utf-8")

    def get_outputs(self):
        return [] if self.editable_mode else [str(self._target())]

    def get_output_mapping(self):
        return {}

    def get_source_files(self):
        return []


class build_with_lm_eval_hook(build):
    sub_commands = [*build.sub_commands, ("build_lm_eval_hook", None)]
