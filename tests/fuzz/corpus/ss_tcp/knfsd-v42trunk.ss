State Recv-Q Send-Q Local Address:Port Peer Address:PortProcess
ESTAB 0      0         192.0.2.10:977     192.0.2.2:2049 cwnd:2 reordering:0
