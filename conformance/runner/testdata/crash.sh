#!/bin/sh
# A testee that answers hello, then dies on its first request: the runner
# must report a crash with this stderr, not hang or pass.
read -r line
echo '{"id":1,"binding":"crash","library_version":"0","spec_version":"v1","ops":["hello","block_hashes","sequence_hashes","seed","chain_step"]}'
read -r line
echo "crash.sh: dying on purpose" >&2
exit 3
