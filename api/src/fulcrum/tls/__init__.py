"""The certificate this node serves: upload and validation, a CSR made on the node, the expiry alarm.

Above `ha` in the layers: installing a certificate first has the HA peer pin it."""
