total 1248
-rw-r--r-- 1 root root 1274315 Nov 28 17:42 coredump.triton.1807.vm.nvcudmp
