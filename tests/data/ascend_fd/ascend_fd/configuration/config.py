# Stand-in (ours) for ascend_fd.configuration.config: the test sets both paths before the import.
import os

KNOWLEDGE_GRAPH_CONF = os.environ["DDTRIAGE_TEST_FD_KG_CONF"]
DEFAULT_USER_CONF = os.environ["DDTRIAGE_TEST_FD_USER_CONF"]
