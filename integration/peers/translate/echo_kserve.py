"""Echo model for KServe's ModelServer (ferry's translation tests). Usage:
    python echo_kserve.py --http_port N --grpc_port M
Every input comes back as an output of the same name, datatype, shape and values; an input
named "raise" makes the model raise."""

import kserve
from kserve import InferOutput, InferRequest, InferResponse, Model, ModelServer


class Echo(Model):
    def __init__(self, name: str):
        super().__init__(name)
        self.ready = True

    async def predict(self, payload: InferRequest, headers=None, response_headers=None):
        if any(i.name == "raise" for i in payload.inputs):
            raise ValueError("echo model raised on purpose")
        outputs = []
        for i in payload.inputs:
            arr = i.as_numpy()
            out = InferOutput(name=i.name, shape=list(i.shape), datatype=i.datatype)
            # set_data_from_numpy, not data=array: kserve 0.21's to_grpc() cannot take a numpy
            # array for raw-input requests (protocol pitfall 6).
            # gRPC: raw_output_contents (tritonclient reads only those); REST: FP16 has no JSON form.
            binary = payload.from_grpc or i.datatype in ("FP16", "BF16")
            out.set_data_from_numpy(arr, binary_data=binary)
            outputs.append(out)
        return InferResponse(
            model_name=self.name,
            infer_outputs=outputs,
            response_id=payload.id or "generated-id",
            from_grpc=payload.from_grpc,
        )


if __name__ == "__main__":
    ModelServer().start([Echo("echo")])
