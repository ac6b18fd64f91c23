"""A config.json written where kvwall reads one: a file named org--model_config.json, the Hugging Face id kvwall takes
from the name."""

import json


def write(folder, config, name="acme--model"):
    """``config`` as ``folder``/``name``_config.json; its path."""
    path = folder / f"{name}_config.json"
    path.write_text(json.dumps(config))
    return path
