# Sourced by the fetch-* scripts: a *private* apt configuration naming only
# Debian unstable, with its own sources list, lists and cache under
# $O2G_CACHE/apt, so that packages can be downloaded (never installed) from
# unstable while the system's apt sources never name it.
# After sourcing: "${apt_opts[@]}" for apt-get/apt-cache, $apt_dir.
apt_dir="$O2G_CACHE/apt"
mkdir -p "$apt_dir"/{etc,lists/partial,cache/archives/partial}
cat >"$apt_dir/etc/sources.list" <<SOURCES
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian unstable main
SOURCES
apt_opts=(
    -o "Dir::Etc::SourceList=$apt_dir/etc/sources.list"
    -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt_dir/lists"
    -o "Dir::Cache=$apt_dir/cache"
    -o Dir::Etc::Preferences=/dev/null
    -o Dir::Etc::PreferencesParts=/dev/null
    -o APT::Sandbox::User=root
)
