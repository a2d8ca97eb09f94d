#!/bin/sh
# A PreToolUse hook for the tests: veto any bash command that runs rm.
payload=$(cat)
case "$payload" in
  *'"command": "rm '*|*'"command": "rm"'*) echo "no rm here" >&2; exit 2 ;;
esac
exit 0
