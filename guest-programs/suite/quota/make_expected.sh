#!/bin/sh
# Rebuilds this subject's suite.jsonl, inputs/, expected/ and tests/ from correct.c
# and cases.py (see ../README.md).
set -e
cd "$(dirname "$0")"
exec python3 ../gen.py "$(basename "$(pwd)")"
