"""The pairing exchange and the one-time code, on a real migrated SQLite database."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy.orm import Session

from fulcrum.ha import pairing
from fulcrum.models._types import utcnow



def test_both_sides_derive_the_same_key_and_it_depends_on_the_exchange() -> None:
    code = pairing.new_code()
    key = pairing.code_key(code)
    offer, private = pairing.make_offer("alpha", "https://10.0.0.1")
    answer, mac, key_b = pairing.answer_offer(key, offer, pairing.offer_mac(key, offer), "beta")
    key_a = pairing.accept_answer(key, offer, private, answer, mac)
    assert key_a == key_b and len(key_a) == 32
    offer2, private2 = pairing.make_offer("alpha", "https://10.0.0.1")
    answer2, mac2, _ = pairing.answer_offer(key, offer2, pairing.offer_mac(key, offer2), "beta")
    assert pairing.accept_answer(key, offer2, private2, answer2, mac2) != key_a  # fresh keys every time


def test_the_code_is_checked_both_ways() -> None:
    right, wrong = pairing.code_key("ABCD-EFGH-JKLM"), pairing.code_key("ABCD-EFGH-JKLN")
    offer, private = pairing.make_offer("alpha", "https://10.0.0.1")
    with pytest.raises(pairing.PairingRefused, match="code is wrong"):
        pairing.answer_offer(right, offer, pairing.offer_mac(wrong, offer), "beta")
    # A man in the middle without the code cannot swap B's public key or forge B's proof.
    answer, mac, _ = pairing.answer_offer(right, offer, pairing.offer_mac(right, offer), "beta")
    forged_key = pairing.make_offer("mallory", "x")[0].public_key
    with pytest.raises(pairing.PairingRefused, match="does not prove"):
        pairing.accept_answer(right, offer, private, pairing.Answer("beta", forged_key, answer.nonce), mac)
    with pytest.raises(pairing.PairingRefused, match="does not prove"):
        pairing.accept_answer(right, offer, private, answer, pairing.answer_mac(wrong, offer, answer))
    # ... nor A's: the offer's fields are all under A's proof, the certificates included.
    pinned = pairing.make_offer("alpha", "https://10.0.0.1", "a" * 64, "b" * 64)[0]
    for original, tampered in (
        (offer, replace(offer, url="https://10.6.6.6")),
        (offer, replace(offer, certificate="c" * 64)),
        (pinned, replace(pinned, certificate="c" * 64)),
        (pinned, replace(pinned, peer_certificate=None)),
    ):
        with pytest.raises(pairing.PairingRefused):
            pairing.answer_offer(right, tampered, pairing.offer_mac(right, original), "beta")


def test_codes_have_sixty_bits_and_forgive_typing() -> None:
    code = pairing.new_code()
    assert len(code) == 14 and code[4] == code[9] == "-"
    assert math.log2(len(pairing.CODE_ALPHABET)) * pairing.CODE_LENGTH >= 60
    assert len(set(pairing.CODE_ALPHABET)) == 32 and not set("IO01") & set(pairing.CODE_ALPHABET)
    assert pairing.code_key(code.lower().replace("-", " ")) == pairing.code_key(code)
    assert len({pairing.new_code() for _ in range(200)}) == 200


def test_a_code_is_stored_hashed_each_address_gets_three_tries_and_ten_burn_it(session: Session) -> None:
    code, expires = pairing.issue_code(session)
    stored = session.execute(pairing.HaPairingCode.__table__.select()).one()
    assert code.replace("-", "") not in str(stored) and stored.code_hash == pairing.code_key(code).hex()
    assert pairing.live_code_key(session, "192.0.2.1") == pairing.code_key(code)
    for left in (2, 1, 0):
        assert pairing.code_failed(session, "192.0.2.1") == left
    with pytest.raises(pairing.SourceLimited, match="3 wrong pairing codes came from 192.0.2.1"):
        pairing.live_code_key(session, "192.0.2.1")
    pairing.live_code_key(session, "192.0.2.2")  # another address may still try
    for source in ("192.0.2.2", "192.0.2.3"):
        for _ in range(3):
            pairing.code_failed(session, source)
    assert pairing.code_failed(session, "192.0.2.4") == 0  # the tenth wrong try overall
    for source in ("192.0.2.4", "192.0.2.5"):
        with pytest.raises(pairing.PairingRefused, match="burnt after 10 wrong tries"):
            pairing.live_code_key(session, source)
    # The chance that those guesses paired: burning the code is all they could do.
    assert pairing.MAX_FAILURES / len(pairing.CODE_ALPHABET) ** pairing.CODE_LENGTH < 1e-17
    pairing.issue_code(session)  # a new code starts over, for every address
    pairing.live_code_key(session, "192.0.2.1")


def test_a_code_expires_after_ten_minutes(session: Session) -> None:
    _, expires = pairing.issue_code(session)
    assert timedelta(minutes=9, seconds=59) < expires - utcnow() <= timedelta(minutes=10)
    pairing.live_code_key(session, "192.0.2.1", now=expires - timedelta(seconds=1))
    with pytest.raises(pairing.PairingRefused, match="expired"):
        pairing.live_code_key(session, "192.0.2.1", now=expires)


def test_without_a_code_nothing_pairs(session: Session) -> None:
    with pytest.raises(pairing.PairingRefused, match="no pairing code"):
        pairing.live_code_key(session, "192.0.2.1")
    code, _ = pairing.issue_code(session)
    pairing.burn_code(session)
    with pytest.raises(pairing.PairingRefused, match="no pairing code"):
        pairing.live_code_key(session, "192.0.2.1")
