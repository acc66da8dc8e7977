"""Prints marker lines, some hidden behind carriage-return progress redraws, on both streams."""

import sys

sys.stdout.write("[PreSegmenter] Running train\n")
sys.stdout.write("Validation step 1\r 10%|#    |\r 20%|##   |\rValidation step 7\n")
sys.stdout.write("Validation step 8 done\r\n")
sys.stderr.write("\x1b[32mValidation step 9\x1b[0m\n")
sys.stdout.write("[PreSegmenter] Running eval")
sys.stdout.flush()
