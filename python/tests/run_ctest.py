"""Runs one pytest file for ctest (python/CMakeLists.txt).

Exit status: pytest's (0 pass, 1 a failure, ...), or 77 (ctest's "skipped") with the
reason printed when numpy or pytest cannot be imported, or when every test of the file
skipped (e.g. the GPU tests without a GPU): ctest then says Skipped, not Passed.
"""

import sys


def main() -> int:
    try:
        import numpy  # noqa: F401
        import pytest
    except ImportError as e:
        print(f"SKIP: {e} (bash scripts/setup.sh installs pytest and numpy)")
        return 77

    class Outcomes:
        def __init__(self) -> None:
            self.passed = self.skipped = self.failed = 0

        def pytest_collectreport(self, report) -> None:
            if report.skipped:  # a module-level skip (pytest.importorskip)
                self.skipped += 1

        def pytest_runtest_logreport(self, report) -> None:
            if report.when == "call" and report.passed:
                self.passed += 1
            elif report.skipped:
                self.skipped += 1
            elif report.failed:
                self.failed += 1

    seen = Outcomes()
    code = pytest.main([sys.argv[1], "-q", "-rs", "-p", "no:cacheprovider", *sys.argv[2:]],
                       plugins=[seen])
    # 5: nothing collected, which a module-level skip also gives
    if code in (0, 5) and seen.passed == 0 and seen.failed == 0 and seen.skipped > 0:
        print("SKIP: every test of this file skipped (reasons above)")
        return 77
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
