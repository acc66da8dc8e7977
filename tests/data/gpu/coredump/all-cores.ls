/tmp/gpu-record/cores:
total 48188
-rw-r--r-- 1 root root 10875016 Nov 28 17:42 coredump.assert.1960.vm.nvcudmp
-rw-r--r-- 1 root root 35907248 Nov 28 17:42 coredump.backward.2067.vm.nvcudmp
-rw-r--r-- 1 root root  1274315 Nov 28 17:42 coredump.triton.1807.vm.nvcudmp
-rw-r--r-- 1 root root  1274315 Nov 28 17:42 coredump.triton-skipabort.2171.vm.nvcudmp
