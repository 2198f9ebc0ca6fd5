"""``python -m pymc_pcrp``: see :mod:`pymc_pcrp.cli`."""

import sys

from pymc_pcrp.cli import main

sys.exit(main())
