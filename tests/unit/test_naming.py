import itertools

from virtbench import naming


def test_run_ids_are_short_lowercase_and_unique():
    ids = {naming.new_run_id() for _ in range(500)}
    assert len(ids) == 500
    assert all(naming.is_run_id(i) and i[0].isalpha() for i in ids)


def test_base36():
    assert [naming.base36(n) for n in (0, 9, 10, 35, 36, 1295)] == ["0", "9", "a", "z", "10", "zz"]


def test_names_carry_the_run_id():
    assert naming.name("abc123", "7") == "vb-abc123-7"
    assert naming.run_id_of("vb-abc123-7") == "abc123"
    assert naming.run_id_of("vb-abc123-br") == "abc123"
    assert naming.run_id_of("vb-ABC123-1") is None
    assert naming.run_id_of("docker0") is None
    assert naming.run_id_of("vb-abc12-1") is None
    # engine image tags and the LXD profile are found by `clean` too
    assert naming.run_id_of("vb-abc123-rootfs:0123abcdef01") == "abc123"
    assert naming.run_id_of("vb-abc123-profile") == "abc123"
    assert naming.run_id_of("vb-abc123") is None  # a bare prefix could be anyone's
    assert naming.run_id_of("vb-abc123-rootfs:x/../y") is None


def test_no_instance_name_is_a_prefix_of_another():
    names = [naming.instance("abc123", n) for n in range(1, 3000)]
    assert names[0] == "vb-abc123-0001" and naming.run_id_of(names[0]) == "abc123"
    ordered = sorted(names)  # a prefix sorts right before the names it starts
    assert not any(b.startswith(a) for a, b in itertools.pairwise(ordered))


def test_interface_names_fit_ifnamsiz():
    assert len(naming.ifname("abc123", "v" + naming.base36(1022))) <= 15
    try:
        naming.ifname("abc123", "toolongsuffix")
    except ValueError as exc:
        assert "15" in str(exc)
    else:
        raise AssertionError("expected ValueError")
