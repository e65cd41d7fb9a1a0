"""Real models: one attention layer of a Hugging Face checkpoint, written as a document (``attncli extract``).

    loading    the model folder (config, tensor names, tokenizer) and the optional extra, never downloading
    weights    the model built by transformers from its weights as attncli reads them (never mapped: issue 26)
    families   what each model family's layer is, as document keys and the modules that hold its numbers
    capture    the model run on the sentence, in float64 throughout, its layer's numbers caught by hooks
    extract    the document written, recomputed with attncli's own core and compared with the model

PyTorch and transformers are imported inside these modules' functions only (``pip install
'attncli[models]'``); the document they write computes with the plain install.
"""
