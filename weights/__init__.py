"""The networks shipped with leelaz (installed as leelaz.weights); see README.md here."""
