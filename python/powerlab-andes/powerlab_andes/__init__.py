"""gpu-power-lab's adapter to ANDES: `version`, `modes`, `play`.

See README.md beside this package for the commands and the simulator
settings chosen.
"""

__version__ = "0.1.0"
