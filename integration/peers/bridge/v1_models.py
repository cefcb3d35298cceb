"""KServe V1 (TF Serving REST) models for ferry's bridging tests, served by KServe's
ModelServer over `/v1/models/<m>:predict`. Torch-free: plain Python over the JSON body.
Usage: python v1_models.py --http_port N --grpc_port M

  scorer  row format: instances [{"x": [3 floats], "tag": str}] ->
          predictions [{"doubled": 2*x, "positives": count of x > 0, "label": tag upper-cased}];
          columnar: inputs {"x": [[3 floats], ...], "tag": [str, ...]} -> outputs of the same
          three, one element per item
  matrix  columnar: inputs [[...], [...]] (one unnamed input) -> outputs: its transpose
  halves  row format, one unnamed input: instances [[4 numbers], ...] -> predictions: each
          doubled (the test types them FP16; V1 JSON carries them as plain numbers)
  bhalves the same model, typed BF16 by the test
"""

from kserve import Model, ModelServer
from kserve.errors import InvalidInput


class Scorer(Model):
    def __init__(self, name: str):
        super().__init__(name)
        self.ready = True

    @staticmethod
    def _score(x, tag):
        return {
            "doubled": [2 * v for v in x],
            "positives": sum(1 for v in x if v > 0),
            "label": tag.upper(),
        }

    async def predict(self, payload, headers=None, response_headers=None):
        instances = payload.get("instances")
        columns = payload.get("inputs")
        if isinstance(instances, list):
            return {"predictions": [self._score(i["x"], i["tag"]) for i in instances]}
        if not isinstance(columns, dict):
            raise InvalidInput("scorer wants instances (rows) or named inputs (columns)")
        if len(columns["x"]) != len(columns["tag"]):
            raise InvalidInput("x and tag differ in batch size")
        scored = [self._score(x, t) for x, t in zip(columns["x"], columns["tag"])]
        return {"outputs": {k: [s[k] for s in scored] for k in ("doubled", "positives", "label")}}


class Matrix(Model):
    def __init__(self, name: str):
        super().__init__(name)
        self.ready = True

    async def predict(self, payload, headers=None, response_headers=None):
        m = payload.get("inputs")
        if not isinstance(m, list):
            raise InvalidInput("matrix wants columnar format (inputs)")
        return {"outputs": [list(col) for col in zip(*m)]}


class Halves(Model):
    def __init__(self, name: str):
        super().__init__(name)
        self.ready = True

    async def predict(self, payload, headers=None, response_headers=None):
        instances = payload.get("instances")
        if not isinstance(instances, list):
            raise InvalidInput("halves wants row format (instances)")
        return {"predictions": [[2 * v for v in row] for row in instances]}


if __name__ == "__main__":
    ModelServer().start([Scorer("scorer"), Matrix("matrix"), Halves("halves"), Halves("bhalves")])
