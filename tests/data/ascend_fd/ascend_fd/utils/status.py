# Stand-in (ours) for ascend_fd.utils.status: the one name custom_update.py imports.
class ParamError(Exception):
    code = 507
