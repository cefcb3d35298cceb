"""Echo model for MLServer (ferry's translation tests): every input comes back as an output of
the same name, datatype, shape and values. An input named "raise" makes the model raise."""

from mlserver import MLModel
from mlserver.codecs import NumpyCodec
from mlserver.types import InferenceRequest, InferenceResponse, ResponseOutput


class Echo(MLModel):
    async def load(self) -> bool:
        return True

    async def predict(self, payload: InferenceRequest) -> InferenceResponse:
        if any(i.name == "raise" for i in payload.inputs):
            raise ValueError("echo model raised on purpose")
        outputs = []
        for i in payload.inputs:
            if i.datatype == "BYTES":
                # Passed through as MLServer decoded it (a list of byte strings).
                outputs.append(
                    ResponseOutput(name=i.name, shape=i.shape, datatype=i.datatype, data=i.data)
                )
                continue
            arr = NumpyCodec.decode_input(i)
            out = NumpyCodec.encode_output(name=i.name, payload=arr)
            out.datatype = i.datatype
            out.shape = list(i.shape)
            outputs.append(out)
        return InferenceResponse(model_name=self.name, id=payload.id, outputs=outputs)
