#!/bin/sh
# A testee that answers hello, then never answers again: the runner must
# report a timeout.
read -r line
echo '{"id":1,"binding":"hang","library_version":"0","spec_version":"v1","ops":["hello","block_hashes","sequence_hashes","seed","chain_step"]}'
exec sleep 60
