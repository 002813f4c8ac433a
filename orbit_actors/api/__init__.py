"""The HTTP API's contract, shared by the server and the clients: its bodies and answers as
pydantic models (:mod:`.models`) and each endpoint as the request it is (:mod:`.calls`)."""
