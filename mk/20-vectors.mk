# The independent Python oracle and the conformance vectors it generates.
# VECTORS_DIR is the current spec version's directory: older versions' vectors
# are never regenerated.
ORACLE_DIR  := conformance/oracle
VECTORS_DIR := conformance/vectors/v1

TEST_TARGETS += oracle-test

.PHONY: oracle-test

# Removing first drops the files of groups that no longer exist.
vectors: $(VENV_STAMP)
	rm -f $(VECTORS_DIR)/*.json
	$(PY) $(ORACLE_DIR)/generate.py --out $(VECTORS_DIR)

oracle-test: $(VENV_STAMP)
	$(PY) -m pytest -q -p no:cacheprovider $(ORACLE_DIR)
