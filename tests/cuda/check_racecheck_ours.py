#!/usr/bin/env python3
"""check_racecheck_ours.py — scripts/racecheck_ours.py on racecheck logs of both report
forms: cuBLAS's hazards alone pass; one in our kernel, a sanitizer failure, a failed
application or a missing summary fail. The excerpts are the H200's (session 24, cut)."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "scripts", "racecheck_ours.py")

ANALYSIS_LIBRARY = """========= COMPUTE-SANITIZER
========= Error: Race reported between Read access at nvjet_sm90_tst_128x160_64x5_2x1_v_bz_coopA_relubias_TNT+0x980
=========     and Write access at nvjet_sm90_tst_128x160_64x5_2x1_v_bz_coopA_relubias_TNT+0x4fc0 [528 hazards]
=========
========= Error: Race reported between Read access at nvjet_sm90_tss_32x64_64x16_4x1_v_bz_splitK_NTN+0xb30
=========     and Write access at nvjet_sm90_tss_32x64_64x16_4x1_v_bz_splitK_NTN+0x2fb0 [96 hazards]
=========
done: 1 iterations; checkpoint /tmp/fh-ur16d/final.safetensors
========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)
"""

HAZARD_OURS = """========= COMPUTE-SANITIZER
========= Error: Potential WAR hazard detected at __shared__ 0x30428 in block (0,31,0) :
=========     Read Thread (127,0,0) at nvjet_sm90_tst_192x160_64x4_1x2_h_bz_coopB_relubias_TNT+0x9b0
=========     Write Thread (256,0,0) at nvjet_sm90_tst_192x160_64x4_1x2_h_bz_coopB_relubias_TNT+0x6180
=========     Current Value : 93, Incoming Value : 93
=========         Host Frame: cudaGraphLaunch [0xdf7a1] in foxhunt
=========
========= Error: Potential RAW hazard detected at __shared__ 0x40 in block (3,1,0) :
=========     Write Thread (5,2,0) at bias_grad_bf16_wide_kernel+0x1a0
=========     Read Thread (5,0,0) at bias_grad_bf16_wide_kernel+0x2c0
=========     Current Value : 0, Incoming Value : 1
=========
========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)
"""

CLEAN = """========= COMPUTE-SANITIZER
done: 1 iterations
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
"""

INTERNAL = """========= COMPUTE-SANITIZER
========= Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception.
error: foxhunt train: iteration 1: cudaStreamSynchronize(c->stream) failed
========= Target application returned an error
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""

CUT_OFF = """========= COMPUTE-SANITIZER
========= Error: Race reported between Read access at nvjet_sm90_tss_32x64_64x16_2x1_v_bz_NTN+0xb00
=========     and Write access at nvjet_sm90_tss_32x64_64x16_2x1_v_bz_NTN+0x29b0 [8 hazards]
"""

OURS_ANALYSIS = """========= Error: Race reported between Write access at ppo_loss_kernel+0x70
=========     and Read access at ppo_loss_kernel+0x90 [3 hazards]
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)
"""

CASES = [("cuBLAS's hazards only", ANALYSIS_LIBRARY, 0, "0 hazards in our kernels, 624 in cuBLAS's"),
         ("a hazard in bias_grad_bf16_wide_kernel", HAZARD_OURS, 1, "OURS"),
         ("no hazard", CLEAN, 0, "0 hazards in our kernels, 0 in cuBLAS's"),
         ("the sanitizer failed", INTERNAL, 1, "the sanitizer failed"),
         ("no summary", CUT_OFF, 1, "did not finish"),
         ("ours, analysis form", OURS_ANALYSIS, 1, "3 hazards in our kernels")]


def main():
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        for name, log, want_rc, want_text in CASES:
            path = os.path.join(d, "log")
            with open(path, "w") as f:
                f.write(log)
            r = subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)
            ok = r.returncode == want_rc and want_text in r.stdout
            failed += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {name}: rc {r.returncode} (want {want_rc})")
            if not ok:
                print(r.stdout, r.stderr)
        r = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
        ok = r.returncode == 2
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} usage: rc {r.returncode} (want 2)")
    print(f"{len(CASES) + 1 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
