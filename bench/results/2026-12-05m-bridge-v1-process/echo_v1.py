"""A KServe V1 model for the bridge's whole-process bench: `echo` answers `predictions` equal
to its `instances` (the rows the OIP → V1 bridge writes). Torch-free.
Usage: python echo_v1.py --http_port N --grpc_port M"""

from kserve import Model, ModelServer


class Echo(Model):
    def __init__(self, name: str):
        super().__init__(name)
        self.ready = True

    async def predict(self, payload, headers=None, response_headers=None):
        return {"predictions": payload["instances"]}


if __name__ == "__main__":
    ModelServer().start([Echo("echo")])
