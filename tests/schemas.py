"""Schemas of formats other tools read, to check virtbench's files against."""

BMF_SCHEMA = {  # bencher.dev/bmf.json: benchmark -> measure -> value (lower/upper optional)
    "type": "object",
    "patternProperties": {
        ".+": {
            "type": "object",
            "patternProperties": {
                ".+": {
                    "type": "object",
                    "required": ["value"],
                    "additionalProperties": False,
                    "properties": {
                        k: {"type": "number"} for k in ("value", "lower_value", "upper_value")
                    },
                }
            },
        }
    },
}
