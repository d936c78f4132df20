"""The probe library: probes as YAML data, loaded and validated once."""
