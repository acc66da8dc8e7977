# The default reprospec runner image: Python 3.11 + torch (CPU) + reprospec's harness.
#
# No registry is needed: the base is built from Debian packages with mmdebstrap and
# `docker import` (python3; gdb, binutils and libc6-dbg for native stacks), and torch comes from a
# local wheelhouse. scripts/docker-setup.sh
# does all of it (base, context, build); by hand, with a build context holding
#   certs/      the host's local CA certificates (*.crt; may be empty)
#   wheels/     `pip download torch==2.13.0 numpy -d wheels` (with their dependencies)
#   harness/    a copy of reprospec/harness (the reprospec_harness package)
#   stackdump/  a copy of reprospec/stackdump (sitecustomize: SIGUSR1 -> stacks)
# run:  docker build -t reprospec-runner:latest -f Dockerfile CONTEXT
ARG BASE=reprospec-base:bookworm
FROM ${BASE}

# HTTPS may go through an intercepting proxy: trust the CAs the host trusts.
COPY certs/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null \
 && if ! command -v python >/dev/null; then ln -s "$(command -v python3)" /usr/local/bin/python; fi

# numpy too: without it torch warns on every import, which pollutes every attempt's stderr.
ARG PACKAGES="torch==2.13.0 numpy"
COPY wheels/ /tmp/wheels/
# Debian marks its Python as externally managed; this image is a single-purpose runtime.
RUN PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-cache-dir --no-index \
      --find-links /tmp/wheels ${PACKAGES} \
 && rm -rf /tmp/wheels

COPY harness/ /opt/reprospec/harness/
COPY stackdump/ /opt/reprospec/stackdump/
# No PYTHONFAULTHANDLER: stackdump's sitecustomize arms faulthandler for the crashing thread
# only (a dump of every running thread can fault itself and turn a SIGBUS into a SIGSEGV).
ENV PYTHONPATH=/opt/reprospec/harness:/opt/reprospec/stackdump
CMD ["python3", "-m", "reprospec_harness"]
