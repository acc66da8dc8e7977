#!/bin/bash
# A test driver as CI scripts write it: run a native test binary in BUILD_DIR ($1), then fail.
cd "$1" || exit 2
./test_ops --gtest_filter=Ops.Add
echo "tests failed" >&2
exit 1
