#!/bin/sh
# Regenerates every subject's test suite (from correct.c) and answers.json
# (from prog.c): gen.py, then spectra.py, then vr_check.py (which adds to the
# answers.json that spectra.py writes).  Needs gcc, gcov and python3; objdump,
# if present, adds the DWARF/gcov line differences to answers.json.
set -e
cd "$(dirname "$0")"
python3 gen.py "$@"
python3 spectra.py "$@"
python3 vr_check.py "$@"
