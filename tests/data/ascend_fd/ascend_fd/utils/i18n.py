# Stand-in (ours) for ascend_fd.utils.i18n: FaultDiag's default language (configuration.config.LANGUAGE).
LANG = "zh"
